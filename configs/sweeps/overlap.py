r"""N-gram overlap and BLEU filters (the paper's section 5.6): the pairs
whose score is at least 0.0, 0.1, ..., 0.9 (and at most 1.0); the argument
is the encoder, then optionally the score: gran, or gran,overlap_2 (one of
overlap_1, overlap_2, overlap_3, bleu; default overlap_1), then optionally
`ranges`: lower x upper bounds instead, lower 0.0 / 0.2 / 0.4 / 0.6 and
upper 0.6 / 0.8 / 0.9 / 1.0 (15 ranges), whose upper bounds drop the near
copies of the reference that a strong NMT writes for its own training data
(10.6 % of the Multi30k de-en 1-best translations of a 12.7-BLEU model were
the reference itself; docs/filtering.md).

Command (scale and overrides: configs/sweeps/common.py):
  paraflax sweep --config configs/sweeps/overlap.py:gran,bleu --workdir runs/sweep_bleu_gran \
    --config.scored=runs/bt.scored.jsonl [--config.max_pairs=24000]
  paraflax sweep --config configs/sweeps/overlap.py:avg,overlap_1,ranges ...
Time: 10 points; GRAN ~2.5 min each on 2 CPU cores at N = 2,000.
Result (WMT de-en back-translations of the 6,000-step NMT, GRAN): the
ranges pick overlap_1 in [0.2, 0.6], STSb test 54.56 against 50.63 for
random pairs. Docs: docs/filtering.md.
"""
from configs import common

SCORES = ("overlap_1", "overlap_2", "overlap_3", "bleu")
LOWER = tuple(round(0.1 * k, 1) for k in range(10))
RANGES = tuple((lo, hi) for lo in (0.0, 0.2, 0.4, 0.6)
               for hi in (0.6, 0.8, 0.9, 1.0) if lo < hi)


def get_config(arg: str):
  encoder, rest = common.encoder_and_rest(arg)
  ranges = rest[-1:] == ["ranges"]
  rest = rest[:-1] if ranges else rest
  score = rest[0] if rest else "overlap_1"
  if score not in SCORES or len(rest) > 1:
    raise ValueError(f"score {','.join(rest)!r}: use one of "
                     f"{', '.join(SCORES)}, then optionally ranges, e.g. "
                     "overlap.py:gran,bleu or overlap.py:avg,bleu,ranges.")
  bounds = RANGES if ranges else [(lo, 1.0) for lo in LOWER]
  return common.sweep(encoder, points=[common.bounded(score, lo, hi)
                                       for lo, hi in bounds])
