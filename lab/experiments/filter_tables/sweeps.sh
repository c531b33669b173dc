#!/bin/bash
# usage: [LANES=n] sweeps.sh NAME ENC GRID... ; GRID = length | cost | overlap | overlap,bleu | lm_ppl | ref_prob | random
#   | overlap,<overlap_1|bleu>,ranges (the lower x upper grid, in sweeps/NAME/<score>_ranges_ENC)
# LANES=n: n processes take the grids' points (`paraflax sweep --worker i --workers n`, each lane
#   through every grid; 3 lanes on 2 cores ran the GRAN grids about 2x faster than one), then one
#   pass per grid writes its table. Rerunning resumes; logs are appended to.
ROOT=$(cd "$(dirname "$0")/../../.." && pwd); cd "${RUN_DIR:-$ROOT/runs/filter_tables}"
name=$1; enc=$2; shift 2; P=${P:-paraflax}; LANES=${LANES:-1}; mkdir -p sweeps/$name

score() { local s=${1#*,}; [ "$s" = "$1" ] || echo $s; }  # GRID's part after its file, if any
workdir() { local s=$(score $1); s=${s:-$1}; echo sweeps/$name/${s//,/_}_$enc; }
sweep() {  # GRID LOG [ARG...]: the grid's sweep, output appended to LOG
  local g=$1 log=$2; shift 2
  local s=$(score $g)
  $P sweep --config $ROOT/configs/sweeps/${g%%,*}.py:$enc${s:+,$s} --workdir $(workdir $g) \
    --config.scored=$name.scored.jsonl "$@" >> $log 2>&1
}
load() { cut -d' ' -f1-3 /proc/loadavg; }

if [ "$LANES" -gt 1 ]; then
  for ((i = 0; i < LANES; i++)); do
    ( for g in "$@"; do
        sweep $g $(workdir $g).w$i.log --worker $i --workers $LANES
        echo "== $name $g $enc lane $i rc=$? $(date -u +%T) load $(load)"
      done ) &
  done
  wait
fi
for g in "$@"; do
  echo "== $name $g $enc start $(date -u +%T) load $(load)"
  sweep $g $(workdir $g).log
  echo "== $name $g $enc rc=$? end $(date -u +%T) load $(load)"
done
