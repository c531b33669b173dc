r"""N-gram overlap and BLEU filters (the paper's section 5.7): the pairs
whose score is at least 0.0, 0.1, ..., 0.9 (and at most 1.0); the argument
is the encoder, then optionally the score: gran, or gran,overlap_2 (one of
overlap_1, overlap_2, overlap_3, bleu; default overlap_1), then optionally
`ranges`: lower x upper bounds instead, lower 0.0 / 0.2 / 0.4 / 0.6 and
upper 0.6 / 0.8 / 0.9 / 1.0 (15 ranges), whose upper bounds drop the near
copies of the reference that a strong NMT writes for its own training data
({runs/bt_analysis/multi30k-stats.json:identical:,=1,052} of the {runs/bt_analysis/multi30k-stats.json:pairs:,=10,000} Multi30k de-en 1-best translations of the
README's {headline/nmt-de.bleu=12.92}-BLEU NMT are the reference itself: `paraflax pair-stats`,
lab/results/runs/bt_analysis/multi30k-stats.json); or `paper`: the paper's grid,
lower 0.0 / 0.1 / 0.2 / 0.3 x upper 0.6 / 0.7 / 0.8 / 0.9 / 1.0 (20
ranges), on the paper preset's training (configs/papers/wieting2017.py:
mini-batches of 100 as their own negatives, margin 0.4).

Command (scale and overrides: configs/sweeps/common.py):
  paraflax sweep --config configs/sweeps/overlap.py:gran,bleu --workdir runs/sweep_bleu_gran \
    --config.scored=runs/bt.scored.jsonl [--config.max_pairs=24000]
  paraflax sweep --config configs/sweeps/overlap.py:avg,overlap_1,ranges ...
  paraflax sweep --config configs/sweeps/overlap.py:gran,bleu,paper ...
Time: 10 points of 160 steps at N = 2,000 (GRAN's and Avg's steps/s on 2
CPU cores: configs/sweeps/common.py).
Result (the 5,000 WMT de-en back-translations of a configs/nmt.py:de NMT
that the same command trains first, GRAN,
lab/experiments/filter_tables/sweeps.sh, kept in
lab/results/runs/filter_tables/de-wmt-gran-*.json): the ranges pick
overlap_1 in {filter_tables/de-wmt-gran-overlap_1_ranges.best.bounds=[0.2, 0.6]}, STSb test {filter_tables/de-wmt-gran-overlap_1_ranges.best.stsb_test=54.56} against {filter_tables/de-wmt-gran-random.mean.stsb_test=50.94} for
random pairs (three seeds); time, from the NMT's training to the last grid:
{filter_tables/de-wmt-gran-overlap_1_ranges.time=1 h 36 min (2 h 54 min of CPU), fresh clone, cold caches, one command that wrote 9 kept files}, on
{filter_tables/de-wmt-gran-overlap_1_ranges.hardware=AMD EPYC, 2 cores}. Docs: docs/filtering.md.
"""
from configs import common

SCORES = ("overlap_1", "overlap_2", "overlap_3", "bleu")
LOWER = tuple(round(0.1 * k, 1) for k in range(10))
RANGES = tuple((lo, hi) for lo in (0.0, 0.2, 0.4, 0.6)
               for hi in (0.6, 0.8, 0.9, 1.0) if lo < hi)
# Wieting et al. 2017's grid of lower x upper bounds.
PAPER = tuple((lo, hi) for lo in (0.0, 0.1, 0.2, 0.3)
              for hi in (0.6, 0.7, 0.8, 0.9, 1.0))


def get_config(arg: str):
  encoder, rest = common.encoder_and_rest(arg)
  grid = rest[-1] if rest[-1:] in (["ranges"], [common.PAPER]) else None
  rest = rest[:-1] if grid else rest
  score = rest[0] if rest else "overlap_1"
  if score not in SCORES or len(rest) > 1:
    raise ValueError(f"score {','.join(rest)!r}: use one of "
                     f"{', '.join(SCORES)}, then optionally ranges or "
                     "paper, e.g. overlap.py:gran,bleu or "
                     "overlap.py:avg,bleu,ranges.")
  bounds = {"ranges": RANGES, common.PAPER: PAPER}.get(
      grid, [(lo, 1.0) for lo in LOWER])
  return common.sweep(encoder, points=[common.bounded(score, lo, hi)
                                       for lo, hi in bounds],
                      paper=grid == common.PAPER)
