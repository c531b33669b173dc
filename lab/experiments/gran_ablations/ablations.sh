#!/bin/bash
# configs/gran.py's comparisons (configs/sweeps/gran_ablations.py): the PPDB
# words of configs/gran.py's header when runs/ppdb_words lacks them, then
# each SETTING's sweep (both seeds) in runs/gran_SETTING, its points split
# over LANES processes (`paraflax sweep --worker i --workers n`), then one
# pass that writes its table. Finished points are skipped: a rerun resumes.
#   [LANES=n] lab/experiments/gran_ablations/ablations.sh SETTING...
#   (SETTING: scramble, margin, mixture or batch)
ROOT=$(cd "$(dirname "$0")/../../.." && pwd); cd "$ROOT"
[ $# -ge 1 ] || { sed -n 7,8p "$0"; exit 2; }
P=${P:-paraflax}; LANES=${LANES:-1}; W=runs/ppdb_words
load() { cut -d' ' -f1-3 /proc/loadavg; }
sweep() {  # SETTING [ARG...]: its sweep's `paraflax sweep`
  local s=$1; shift
  $P sweep --config configs/sweeps/gran_ablations.py:$s --workdir runs/gran_$s "$@"
}
if [ ! -s $W/word_vectors.txt ]; then
  echo "== ppdb_words start $(date -u +%T) load $(load)"
  mkdir -p runs
  { $P train --config configs/ppdb_words.py --workdir $W &&
    $P export-words --workdir $W; } >> $W.log 2>&1 || { echo "ppdb_words failed: $W.log" >&2; exit 1; }
fi
for s in "$@"; do
  echo "== $s start $(date -u +%T) load $(load)"
  for ((i = 0; i < LANES; i++)); do
    sweep $s --worker $i --workers $LANES >> runs/gran_$s.w$i.log 2>&1 &
  done
  wait
  sweep $s >> runs/gran_$s.log 2>&1
  echo "== $s rc=$? end $(date -u +%T) load $(load)"
done
