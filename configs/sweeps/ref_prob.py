r"""Reference-classifier filter (the paper's section 5.6): the pairs whose
translation the reference-vs-translation classifier finds reference-like,
`ref_prob` at least 0.0, 0.1, ..., 0.9 (and at most 1.0; scored with
`paraflax score-paraphrases --classifier-workdir`); the argument is the
encoder (avg, lstmavg, gran).

Command (scale and overrides: configs/sweeps/common.py):
  paraflax sweep --config configs/sweeps/ref_prob.py:gran --workdir runs/sweep_ref_prob_gran \
    --config.scored=runs/bt.scored.jsonl [--config.max_pairs=24000]
Time: 10 points of 160 steps at N = 2,000 (GRAN's and Avg's steps/s on 2
CPU cores: configs/sweeps/common.py). A bound that keeps fewer than N
pairs (high ones, with a weak NMT whose output the classifier tells apart
easily) fails alone; the table says so.
"""
from configs import common

LOWER = tuple(round(0.1 * k, 1) for k in range(10))


def get_config(arg: str):
  encoder, _ = common.encoder_and_rest(arg)
  return common.sweep(encoder, points=[common.bounded("ref_prob", lo, 1.0)
                                       for lo in LOWER])
