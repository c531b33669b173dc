#!/bin/bash
# GRAN over the full length grid (14 ranges) of de-en Multi30k, at the Avg sweep's N and steps (configs/sweeps/common.py).
ROOT=$(cd "$(dirname "$0")/../../.." && pwd); IN=${RUN_DIR:-$ROOT/runs/filter_tables}; cd "${OUT_DIR:-$IN}"
P=${P:-paraflax}; mkdir -p sweeps/multi30k_de_en
echo "== gran length start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
$P sweep --config $ROOT/configs/sweeps/length.py:gran --workdir sweeps/multi30k_de_en/length_gran \
  --config.scored=$IN/multi30k_de_en.scored.jsonl > sweeps/multi30k_de_en/length_gran.log 2>&1
echo "== gran length rc=$? end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
