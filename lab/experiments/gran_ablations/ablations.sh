#!/bin/bash
# configs/gran.py's comparisons (configs/sweeps/gran_ablations.py): the PPDB
# words of configs/gran.py's header when runs/ppdb_words lacks them, then
# each SETTING's sweep (both seeds) in runs/gran_SETTING, its points split
# over LANES processes (`paraflax sweep --worker i --workers n`), then one
# pass that writes its table. Finished points are skipped: a rerun resumes.
#   [LANES=n] lab/experiments/gran_ablations/ablations.sh SETTING...
#   (SETTING: scramble, margin, mixture, batch or words; words also
#   writes the PPDB words at learning rate 1e-3, runs/ppdb_words_lr1e-3)
ROOT=$(cd "$(dirname "$0")/../../.." && pwd); cd "$ROOT"
[ $# -ge 1 ] || { sed -n 7,9p "$0"; exit 2; }
P=${P:-paraflax}; LANES=${LANES:-1}
load() { cut -d' ' -f1-3 /proc/loadavg; }
sweep() {  # SETTING [ARG...]: its sweep's `paraflax sweep`
  local s=$1; shift
  $P sweep --config configs/sweeps/gran_ablations.py:$s --workdir runs/gran_$s "$@"
}
words() {  # WORKDIR [OVERRIDE...]: configs/ppdb_words.py's words, once
  local w=$1; shift
  [ -s $w/word_vectors.txt ] && return
  echo "== $w start $(date -u +%T) load $(load)"
  mkdir -p runs
  { $P train --config configs/ppdb_words.py --workdir $w "$@" &&
    $P export-words --workdir $w; } >> $w.log 2>&1 || { echo "$w failed: $w.log" >&2; exit 1; }
}
words runs/ppdb_words
[[ " $* " == *" words "* ]] &&
  words runs/ppdb_words_lr1e-3 --config.optimizer.learning_rate=1e-3
for s in "$@"; do
  echo "== $s start $(date -u +%T) load $(load)"
  for ((i = 0; i < LANES; i++)); do
    sweep $s --worker $i --workers $LANES >> runs/gran_$s.w$i.log 2>&1 &
  done
  wait
  sweep $s >> runs/gran_$s.log 2>&1
  echo "== $s rc=$? end $(date -u +%T) load $(load)"
done
