#!/bin/bash
# ref_prob from a classifier that never saw the scored ids: back-translations of Multi30k LANG-en lines 15,001-25,000
# (prep_heldapart.py) train refclf_heldapart_LANG (Avg, random negatives, as refclf_LANG); it rescores
# multi30k_LANG_en.bt.jsonl (lines 1-10,000) and the ref_prob Avg sweep reruns on that file.
#   lab/experiments/filter_tables/heldapart.sh LANG NMT_WORKDIR   (the NMT that back-translated multi30k_LANG_en)
ROOT=$(cd "$(dirname "$0")/../../.." && pwd); IN=${RUN_DIR:-$ROOT/runs/filter_tables}; cd "${OUT_DIR:-$IN}"
lang=$1; nmt=$(realpath "$2"); P=${P:-paraflax}; PY=${PY:-python3}
f=multi30k_${lang}_en; clf=refclf_heldapart_$lang
step() { echo "== $lang $1 start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"; }
step prep; $PY $ROOT/lab/experiments/filter_tables/prep_heldapart.py $f
step backtranslate
[ -s $f.clf.bt.jsonl ] || { time $P backtranslate --workdir $nmt --src $f.clf.src --ref $f.clf.ref \
  --output $f.clf.bt.jsonl --beam 5 --nbest 5 --stop best_ended; } 2>&1 | tail -5 > $f.clf.bt.log
step classifier
[ -d $clf/best ] || { time $P train --config $ROOT/configs/ref_classifier.py:avg --workdir $clf \
  --config.data.input=$f.clf.bt.jsonl; } > $clf.log 2>&1
{ time $P eval --workdir $clf; } > $clf.eval.log 2>&1; grep accuracy $clf.eval.log
$PY $ROOT/lab/experiments/filter_tables/clf_accuracy.py $clf $IN/$f.bt.jsonl
step score
[ -s $f.heldclf.scored.jsonl ] || { time $P score-paraphrases --input $IN/$f.bt.jsonl --output $f.heldclf.scored.jsonl \
  --lm $IN/$f.lm --classifier-workdir $clf; } > $f.heldclf.score.log 2>&1
step sweep; mkdir -p sweeps/$f
$P sweep --config $ROOT/configs/sweeps/ref_prob.py:avg --workdir sweeps/$f/ref_prob_heldapart_avg \
  --config.scored=$f.heldclf.scored.jsonl > sweeps/$f/ref_prob_heldapart_avg.log 2>&1
echo "== sweep rc=$? end $(date -u +%T)"
