#!/bin/bash
# GRAN on the random baseline (seed 0) and the best Avg length point of wikiauto.
ROOT=$(cd "$(dirname "$0")/../../.." && pwd); cd "${RUN_DIR:-$ROOT/runs/filter_tables}"
echo "== gran start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
paraflax sweep --config $ROOT/configs/sweeps/random.py:gran --workdir sweeps/wikiauto/gran_best --config.scored=wikiauto.scored.jsonl "--config.axes=()" "--config.points=((\"data.filter={'score': 'random'}\", 'seed=0'), (\"data.filter={'score': 'length', 'lo': 20, 'hi': 100}\",))" > sweeps/wikiauto/gran_best.log 2>&1
echo "== gran rc=$? end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
