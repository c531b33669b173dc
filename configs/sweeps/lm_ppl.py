r"""Language-model filter (the paper's section 5.6): the pairs whose
translation has a perplexity of at most 10, 15, 20, 25, 30, 40, 50, 75,
100, 200 or 500 under the 3-gram LM of the references (`lm_ppl`, scored
with `paraflax score-paraphrases --lm`); the argument is the encoder (avg,
lstmavg, gran), then optionally `paper`: the paper's grid, at most 25,
50, ..., 200 or no bound (inf; the paper writes {25, ..., 200, inf}: the
steps of 25 between are paraflax's reading), on the paper preset's
training (configs/papers/wieting2017.py: mini-batches of 100 as their own
negatives, margin 0.4): `lm_ppl.py:gran,paper`.

Why these bounds: perplexity has no fixed scale, so the grid follows the
measured distribution. The {runs/bt_analysis/multi30k-stats.json:pairs:,=10,000} 1-best Multi30k de-en translations of the
README's 6,000-step de-en NMT, under a 3-gram of 5,000 held-apart
Multi30k train captions (lab/experiments/filter_tables/language.sh), have
percentiles 10: {runs/bt_analysis/multi30k-stats.json:scores/lm_ppl/p10:.1f=10.6}, 25: {runs/bt_analysis/multi30k-stats.json:scores/lm_ppl/p25:.1f=17.5}, 50: {runs/bt_analysis/multi30k-stats.json:scores/lm_ppl/p50:.1f=31.2}, 75: {runs/bt_analysis/multi30k-stats.json:scores/lm_ppl/p75:.1f=61.0},
90: {runs/bt_analysis/multi30k-stats.json:scores/lm_ppl/p90:.1f=114.8} and 99: {runs/bt_analysis/multi30k-stats.json:scores/lm_ppl/p99:.1f=427.2} (`paraflax pair-stats --json`:
lab/results/runs/bt_analysis/multi30k-stats.json): the bounds span them,
dense where most pairs lie. A stronger NMT or another LM moves the
distribution: `paraflax pair-stats SCORED.jsonl` prints it; set
--config.points or copy this file.

Command (scale and overrides: configs/sweeps/common.py):
  paraflax sweep --config configs/sweeps/lm_ppl.py:gran --workdir runs/sweep_lm_ppl_gran \
    --config.scored=runs/bt.scored.jsonl [--config.max_pairs=24000]
Time: 11 points of 160 steps at N = 2,000 (GRAN's and Avg's steps/s on 2
CPU cores: configs/sweeps/common.py). A bound that keeps fewer than N
pairs fails alone (the table says so).
Docs: docs/filtering.md, docs/configs.md (sweeps).
"""
from configs import common

UPPER = (10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 75.0, 100.0, 200.0, 500.0)
# Wieting et al. 2017's upper bounds; "inf" (float("inf") when the filter
# is read) keeps every pair.
PAPER = (25.0, 50.0, 75.0, 100.0, 125.0, 150.0, 175.0, 200.0, "inf")


def get_config(arg: str):
  encoder, rest = common.encoder_and_rest(arg)
  if rest not in ([], [common.PAPER]):
    raise ValueError(f"{','.join(rest)!r}: lm_ppl.py takes the encoder, "
                     "then optionally paper (lm_ppl.py:gran,paper).")
  paper = rest == [common.PAPER]
  return common.sweep(encoder, points=[common.bounded("lm_ppl", 0.0, hi)
                                       for hi in (PAPER if paper else UPPER)],
                      paper=paper)
