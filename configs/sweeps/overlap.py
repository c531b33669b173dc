r"""N-gram overlap and BLEU filters (the paper's section 5.6): the pairs
whose score is at least 0.0, 0.1, ..., 0.9 (and at most 1.0); the argument
is the encoder, then optionally the score: gran, or gran,overlap_2 (one of
overlap_1, overlap_2, overlap_3, bleu; default overlap_1).

Command (scale and overrides: configs/sweeps/common.py):
  paraflax sweep --config configs/sweeps/overlap.py:gran,bleu --workdir runs/sweep_bleu_gran \
    --config.scored=runs/bt.scored.jsonl [--config.max_pairs=24000]
Time: 10 points; GRAN ~2.5 min each on 2 CPU cores at N = 2,000. Upper
bounds too (lower x upper): list the pairs in --config.points, or copy this
file with two loops.
"""
from configs import common

SCORES = ("overlap_1", "overlap_2", "overlap_3", "bleu")
LOWER = tuple(round(0.1 * k, 1) for k in range(10))


def get_config(arg: str):
  encoder, rest = common.encoder_and_rest(arg)
  score = rest[0] if rest else "overlap_1"
  if score not in SCORES or len(rest) > 1:
    raise ValueError(f"score {','.join(rest)!r}: use one of "
                     f"{', '.join(SCORES)}, e.g. overlap.py:gran,bleu.")
  return common.sweep(encoder, points=[common.bounded(score, lo, 1.0)
                                       for lo in LOWER])
