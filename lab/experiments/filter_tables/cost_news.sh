#!/bin/bash
# usage: [ENC=avg|gran] cost_news.sh [NAME...] (default: the de and fr newstest files)
# The cost grid (upper bounds 0.1..1.0) keeps no newstest pairs (10 % quantile of cost 1.19 / 1.3): bounds 1.5..2.0 and 3.0 instead.
ROOT=$(cd "$(dirname "$0")/../../.." && pwd); cd "${RUN_DIR:-$ROOT/runs/filter_tables}"
PTS=$(python3 -c "print(repr(tuple(str({'score':'cost','lo':0.0,'hi':h}).join(['data.filter=','']) for h in (1.5,1.6,1.7,1.8,2.0,3.0))))")
for name in ${@:-newstest_pool_de_en newstest_pool_fr_en}; do
  enc=${ENC:-avg}
  echo "== $name cost $enc start $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
  ${P:-paraflax} sweep --config $ROOT/configs/sweeps/cost.py:$enc --workdir sweeps/$name/cost_$enc --config.scored=$name.scored.jsonl "--config.points=$PTS" > sweeps/$name/cost_$enc.log 2>&1
  echo "== $name cost rc=$? end $(date -u +%T)"
done
