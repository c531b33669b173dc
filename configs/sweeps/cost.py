r"""Translation cost filter (the paper's section 5.6): the pairs whose NMT
cost is at most 0.1, 0.2, ..., 1.0; the argument is the encoder (avg,
lstmavg, gran), then optionally what the cost is divided by: subword (the
default: the score `cost`, NLL per subword with EOS, as backtranslate
writes it) or token (the score `cost_token`, NLL per word token of the
translation, the paper's): cost.py:gran,token. The bounds are
paraflax's choice.

Command (scale and overrides: configs/sweeps/common.py):
  paraflax sweep --config configs/sweeps/cost.py:gran --workdir runs/sweep_cost_gran \
    --config.scored=runs/bt.scored.jsonl [--config.max_pairs=24000]
Time: 10 points of 160 steps at N = 2,000 (GRAN's and Avg's steps/s on 2
CPU cores: configs/sweeps/common.py). A weak NMT model's costs are high: a
bound that keeps fewer than N pairs fails alone (the table says so); widen
the grid with --config.points=... or a copy of this file.
"""
from configs import common

UPPER = tuple(round(0.1 * k, 1) for k in range(1, 11))


# cost_per -> the score of the scored file.
SCORES = {"subword": "cost", "token": "cost_token"}


def get_config(arg: str):
  encoder, rest = common.encoder_and_rest(arg)
  per = rest[0] if rest else "subword"
  if per not in SCORES or len(rest) > 1:
    raise ValueError(f"{','.join(rest)!r}: cost.py takes the encoder, then "
                     "optionally subword or token (cost.py:gran,token).")
  return common.sweep(encoder, points=[common.bounded(SCORES[per], 0.0, hi)
                                       for hi in UPPER])
