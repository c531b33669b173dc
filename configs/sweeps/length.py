r"""Length filter (the paper's section 5.5): the back-translated pairs whose
translation has lo..hi tokens, N of them per range; the argument is the
encoder (avg, lstmavg, gran).

Command (scale and overrides: configs/sweeps/common.py):
  paraflax sweep --config configs/sweeps/length.py:gran --workdir runs/sweep_length_gran \
    --config.scored=runs/bt.scored.jsonl [--config.max_pairs=24000]
Time: 14 points of 160 steps at N = 2,000 (GRAN's and Avg's steps/s on 2
CPU cores: configs/sweeps/common.py). A range that keeps fewer than N
pairs (long sentences in caption data) fails alone; the table says so.
"""
from configs import common

RANGES = ((0, 10), (0, 15), (0, 20), (0, 30), (0, 100), (10, 20), (10, 30),
          (10, 100), (15, 25), (15, 30), (15, 100), (20, 30), (20, 100),
          (30, 100))


def get_config(arg: str):
  encoder, _ = common.encoder_and_rest(arg)
  return common.sweep(encoder, points=[common.bounded("length", lo, hi)
                                       for lo, hi in RANGES])
