#!/bin/bash
# usage: sweeps.sh NAME ENC GRID... ; GRID = length | cost | overlap | overlap,bleu | lm_ppl | ref_prob | random
#   | overlap,<overlap_1|bleu>,ranges (the lower x upper grid, in sweeps/NAME/<score>_ranges_ENC)
ROOT=$(cd "$(dirname "$0")/../.." && pwd); cd "${RUN_DIR:-$ROOT/runs/i11}"
name=$1; enc=$2; shift 2; P=${P:-paraflax}
for g in "$@"; do
  file=${g%%,*}; score=${g#*,}; [ "$score" = "$g" ] && score=$file
  w=sweeps/$name/${score//,/_}_$enc
  arg=$enc; [ "$score" != "$file" ] && arg="$enc,$score"
  echo "== $name $score $enc start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  $P sweep --config $ROOT/configs/sweeps/$file.py:$arg --workdir $w --config.scored=$name.scored.jsonl > $w.log 2>&1
  echo "== $name $score $enc rc=$? end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
done
