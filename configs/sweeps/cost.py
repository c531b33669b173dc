r"""Translation cost filter (the paper's section 5.6): the pairs whose NMT
cost (NLL per subword, from backtranslate) is at most 0.1, 0.2, ..., 1.0;
the argument is the encoder (avg, lstmavg, gran).

Command (scale and overrides: configs/sweeps/common.py):
  paraflax sweep --config configs/sweeps/cost.py:gran --workdir runs/sweep_cost_gran \
    --config.scored=runs/bt.scored.jsonl [--config.max_pairs=24000]
Time: 10 points; GRAN ~2.5 min each on 2 CPU cores at N = 2,000. A weak
NMT model's costs are high: a bound that keeps fewer than N pairs fails
alone (the table says so); widen the grid with
--config.points=... or a copy of this file.
"""
from configs import common

UPPER = tuple(round(0.1 * k, 1) for k in range(1, 11))


def get_config(arg: str):
  encoder, _ = common.encoder_and_rest(arg)
  return common.sweep(encoder, points=[common.bounded("cost", 0.0, hi)
                                       for hi in UPPER])
