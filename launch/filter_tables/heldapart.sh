#!/bin/bash
# ref_prob from a classifier that never saw the scored ids: back-translations of Multi30k de-en lines 15,001-25,000
# (prep_heldapart.py) train refclf_heldapart (Avg, random negatives, as refclf_de); it rescores
# multi30k_de_en.bt.jsonl (lines 1-10,000) and the ref_prob Avg sweep reruns on that file.
ROOT=$(cd "$(dirname "$0")/../.." && pwd); IN=${RUN_DIR:-$ROOT/runs/i11}; cd "${OUT_DIR:-$IN}"
P=${P:-paraflax}; PY=${PY:-python3}; NMT=${NMT:-$ROOT/runs/i17_feed}
step() { echo "== $1 start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"; }
step prep; $PY $ROOT/launch/filter_tables/prep_heldapart.py
step backtranslate
[ -s multi30k_de_en.clf.bt.jsonl ] || { time $P backtranslate --workdir $NMT --src multi30k_de_en.clf.src --ref multi30k_de_en.clf.ref \
  --output multi30k_de_en.clf.bt.jsonl --beam 5 --nbest 5 --stop best_ended; } 2>&1 | tail -5 > multi30k_de_en.clf.bt.log
step classifier
{ time $P train --config $ROOT/configs/ref_classifier.py:avg --workdir refclf_heldapart \
  --config.data.input=multi30k_de_en.clf.bt.jsonl; } > refclf_heldapart.log 2>&1
{ time $P eval --workdir refclf_heldapart; } > refclf_heldapart.eval.log 2>&1; grep accuracy refclf_heldapart.eval.log
$PY $ROOT/launch/filter_tables/clf_accuracy.py refclf_heldapart $IN/multi30k_de_en.bt.jsonl
step score
{ time $P score-paraphrases --input $IN/multi30k_de_en.bt.jsonl --output multi30k_de_en.heldclf.scored.jsonl \
  --lm $IN/multi30k_de_en.lm --classifier-workdir refclf_heldapart; } > multi30k_de_en.heldclf.score.log 2>&1
step sweep; mkdir -p sweeps/multi30k_de_en
$P sweep --config $ROOT/configs/sweeps/ref_prob.py:avg --workdir sweeps/multi30k_de_en/ref_prob_heldapart_avg \
  --config.scored=multi30k_de_en.heldclf.scored.jsonl > sweeps/multi30k_de_en/ref_prob_heldapart_avg.log 2>&1
echo "== sweep rc=$? end $(date -u +%T)"
