#!/bin/bash
# Every step of the filter tables for one language, from its NMT workdir:
# inputs (prep.py), back-translations (beam 5, 5-best, --stop best_ended),
# 3-gram LMs on the held-apart references, an Avg reference classifier on
# the Multi30k file, scores, and the Avg sweeps of every grid (newstest's
# cost grid as cost_news.sh's bounds). Steps whose output exists are skipped.
#   launch/filter_tables/language.sh LANG NMT_WORKDIR     (e.g. cs runs/nmt_cs)
ROOT=$(cd "$(dirname "$0")/../.." && pwd); cd "${RUN_DIR:-$ROOT/runs/i11}"
lang=$1; nmt=$(realpath "$2"); P=${P:-paraflax}; PY=${PY:-python3}
step() { echo "== $lang $1 start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"; }
files=(multi30k_${lang}_en newstest_pool_${lang}_en)
step prep; [ -s ${files[1]}.held.en ] || $PY $ROOT/launch/filter_tables/prep.py "${files[@]}"
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
step sweeps  # the two files' sweeps side by side (one process each)
sweeps=(random length overlap overlap,bleu lm_ppl ref_prob)
{ P=$P bash $ROOT/launch/filter_tables/sweeps.sh ${files[0]} avg "${sweeps[@]}" cost; } &
{ P=$P bash $ROOT/launch/filter_tables/sweeps.sh ${files[1]} avg "${sweeps[@]}"
  P=$P bash $ROOT/launch/filter_tables/cost_news.sh ${files[1]}; } &
wait
step done
