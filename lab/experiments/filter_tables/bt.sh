#!/bin/bash
# The back-translations of the filter tables: beam 5, 5-best, --stop best_ended.
ROOT=$(cd "$(dirname "$0")/../../.." && pwd); cd "${RUN_DIR:-$ROOT/runs/filter_tables}"
# DE_NMT, FR_NMT: the de-en and fr-en nmt workdirs (default runs/nmt_de, runs/nmt_fr).
P="paraflax"; DE=${DE_NMT:-$ROOT/runs/nmt_de}; FR=${FR_NMT:-$ROOT/runs/nmt_fr}
for spec in "multi30k_de_en $DE" "multi30k_fr_en $FR" "newstest_pool_de_en $DE" "newstest_pool_fr_en $FR"; do
  set -- $spec
  echo "== $1 $2 $(date -u +%T)"
  /usr/bin/time -v $P backtranslate --workdir $2 --src $1.src --ref $1.ref --output $1.bt.jsonl --beam 5 --nbest 5 --stop best_ended 2>&1 | grep -v -i warning | tail -30 > $1.bt.log
  echo "== done $1 $(date -u +%T)"
done
