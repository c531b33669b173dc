#!/bin/bash
# Back-translations of issue 11: beam 5, 5-best, --stop best_ended.
ROOT=$(cd "$(dirname "$0")/../.." && pwd); cd "${RUN_DIR:-$ROOT/runs/i11}"
P="paraflax"
for spec in "multi30k_de_en i17_feed" "multi30k_fr_en i17_fr_feed" "newstest_pool_de_en i17_feed" "newstest_pool_fr_en i17_fr_feed"; do
  set -- $spec
  echo "== $1 $2 $(date -u +%T)"
  /usr/bin/time -v $P backtranslate --workdir $ROOT/runs/$2 --src $1.src --ref $1.ref --output $1.bt.jsonl --beam 5 --nbest 5 --stop best_ended 2>&1 | grep -v -i warning | tail -30 > $1.bt.log
  echo "== done $1 $(date -u +%T)"
done
