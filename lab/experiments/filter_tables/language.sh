#!/bin/bash
# Every step of the filter tables for one language, from its NMT workdir:
# inputs (prep.py), back-translations (beam 5, 5-best, --stop best_ended),
# 3-gram LMs on the held-apart references, an Avg reference classifier on
# the first file (refclf_LANG), scores, and the sweeps of every grid (Avg;
# ENC=gran for GRAN's, which reuse every earlier step's output),
# one process per file side by side; the cost grid is cost_news.sh's bounds
# where the 0.1..1.0 one would keep no pairs (1-best 10 % quantile > 1).
# Steps whose output exists are skipped.
#   [ENC=avg|gran] lab/experiments/filter_tables/language.sh LANG NMT_WORKDIR [FILE...]
#   (e.g. cs runs/nmt_cs; FILE... defaults to multi30k_LANG_en newstest_pool_LANG_en)
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
# The NMT workdir as given from where the script was started.
lang=$1; nmt=$(realpath "$2"); shift 2; P=${P:-paraflax}; PY=${PY:-python3}; enc=${ENC:-avg}
# RUN_DIR made absolute: sweeps.sh and cost_news.sh read it after the cd.
R=${RUN_DIR:-$ROOT/runs/filter_tables}; mkdir -p "$R"; export RUN_DIR=$(realpath "$R"); cd "$RUN_DIR"
step() { echo "== $lang $1 start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"; }
files=("$@"); [ ${#files[@]} -gt 0 ] || files=(multi30k_${lang}_en newstest_pool_${lang}_en)
step prep
for f in "${files[@]}"; do [ -s $f.held.en ] || $PY $ROOT/lab/experiments/filter_tables/prep.py $f; done
for f in "${files[@]}"; do
  step "backtranslate $f"
  [ -s $f.bt.jsonl ] || { /usr/bin/time -v $P backtranslate --workdir $nmt --src $f.src --ref $f.ref \
    --output $f.bt.jsonl --beam 5 --nbest 5 --stop best_ended; } 2>&1 | grep -v -i warning | tail -30 > $f.bt.log
  [ -s $f.lm ] || $P train-lm --input $f.held.en --order 3 --output $f.lm > $f.lm.log 2>&1
done
step classifier
[ -d refclf_$lang/best ] || { time $P train --config $ROOT/configs/ref_classifier.py:avg --workdir refclf_$lang \
  --config.data.input=${files[0]}.bt.jsonl; } > refclf_$lang.log 2>&1
$P eval --workdir refclf_$lang > refclf_$lang.eval.log 2>&1; grep -i accuracy refclf_$lang.eval.log
for f in "${files[@]}"; do
  step "score $f"
  [ -s $f.scored.jsonl ] || { time $P score-paraphrases --input $f.bt.jsonl --output $f.scored.jsonl \
    --lm $f.lm --classifier-workdir refclf_$lang; } > $f.score.log 2>&1
  mkdir -p sweeps/$f
done
high_costs() {  # exit 0 where a tenth of the 1-best costs or more exceeds 1
  $PY -c "import json, sys; c = sorted(r['scores']['cost'] for r in map(json.loads, open(sys.argv[1]))
if r.get('rank', 0) == 0); sys.exit(c[len(c) // 10] <= 1.0)" $1.scored.jsonl
}
step sweeps
. $ROOT/lab/experiments/filter_tables/grids.sh
for f in "${files[@]}"; do
  { P=$P bash $ROOT/lab/experiments/filter_tables/sweeps.sh $f $enc "${GRIDS[@]}"
    if high_costs $f; then P=$P ENC=$enc bash $ROOT/lab/experiments/filter_tables/cost_news.sh $f
    else P=$P bash $ROOT/lab/experiments/filter_tables/sweeps.sh $f $enc cost; fi; } &
done
wait
step done
