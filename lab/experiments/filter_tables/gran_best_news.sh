#!/bin/bash
# GRAN on the random baseline (seed 0) and the best Avg length point of de-en newstest.
ROOT=$(cd "$(dirname "$0")/../../.." && pwd); cd "${RUN_DIR:-$ROOT/runs/filter_tables}"
echo "== gran start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
paraflax sweep --config $ROOT/configs/sweeps/random.py:gran --workdir sweeps/newstest_pool_de_en/gran_best --config.scored=newstest_pool_de_en.scored.jsonl "--config.axes=()" "--config.points=((\"data.filter={'score': 'random'}\", 'seed=0'), (\"data.filter={'score': 'length', 'lo': 10, 'hi': 30}\",))" > sweeps/newstest_pool_de_en/gran_best.log 2>&1
echo "== gran rc=$? end $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
