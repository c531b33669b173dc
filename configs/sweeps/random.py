r"""The random baseline of every filter table: N pairs drawn with no filter,
for seeds 0, 1, 2 (the seed draws the pairs and the initial parameters);
the argument is the encoder (avg, lstmavg, gran).

Command (scale and overrides: configs/sweeps/common.py):
  paraflax sweep --config configs/sweeps/random.py:gran --workdir runs/sweep_random_gran \
    --config.scored=runs/bt.scored.jsonl [--config.max_pairs=24000]
Time: 3 points of 160 steps at N = 2,000 (GRAN's and Avg's steps/s on 2
CPU cores: configs/sweeps/common.py).
"""
from configs import common


def get_config(arg: str):
  encoder, _ = common.encoder_and_rest(arg)
  return common.sweep(encoder, axes=[["data.filter={'score': 'random'}"],
                                     [f"seed={s}" for s in range(3)]])
