r"""GRAN (Wieting & Gimpel 2017): a_t = x_t * sigmoid(W_x x_t + W_h h_t + b),
embedding = mean of a_t; margin loss with hardest in-megabatch negatives, on
the 19,432 human English pairs of `paraphrase_en_human` (generaltest2022
de-en / cs-en reference pairs + wikiauto), words from random init.

Every setting (steps, batch, megabatch, margin, sizes, data, optimizer,
eval) is in configs/paraphrase.py, the family's file; this is its "gran".

Command:
  paraflax train --config configs/gran.py --workdir runs/gran
  paraflax eval-sts --workdir runs/gran
Time (2 CPU cores, 2026-11-21): train 447 s, eval-sts 15 s.
Results (Pearson x 100, best STSb.dev-tuning checkpoint, step 480; rerun
2026-11-23, the same before and after the configs moved here):
  STSb dev 64.37, STSb test 57.25, SICK train 59.64,
  STS12-15 mean 52.73, size-weighted 55.96
  (per year: STS12 44.46, STS13 37.17, STS14 56.90, STS15 63.70).
"""
from configs import paraphrase


def get_config():
  return paraphrase.get_config("gran")
