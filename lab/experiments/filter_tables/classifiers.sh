#!/bin/bash
# The reference classifiers of the paper's table: {avg, lstm} x {random, hardest} negatives, on the de-en Multi30k
# back-translations; trained in $OUT_DIR/refclf_<model>_<negative> and evaluated (dev and test accuracy).
# usage: classifiers.sh [MODEL,NEGATIVE[,STEPS]]... (default: all four at the config's steps)
ROOT=$(cd "$(dirname "$0")/../../.." && pwd); IN=${RUN_DIR:-$ROOT/runs/filter_tables}; cd "${OUT_DIR:-$IN}"
P=${P:-paraflax}
[ $# = 0 ] && set -- avg,random avg,hardest lstm,random lstm,hardest
for spec in "$@"; do
  IFS=, read model neg steps <<< "$spec"
  w=refclf_${model}_${neg}; extra=()
  [ -n "$steps" ] && extra=(--config.train_steps=$steps)
  echo "== $w ${steps:-default} steps start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  { time $P train --config $ROOT/configs/ref_classifier.py:$model --workdir $w --config.data.input=$IN/multi30k_de_en.bt.jsonl \
      --config.data.negative=$neg "${extra[@]}"; } > $w.log 2>&1
  { time $P eval --workdir $w; } > $w.eval.log 2>&1
  echo "== $w rc=$? end $(date -u +%T)"; grep accuracy $w.eval.log
done
