r"""Avg: the mean of the word vectors, trained with the margin loss and
hardest in-megabatch negatives on the 19,432 human English pairs of
`paraphrase_en_human`, words from random init.

Every setting (steps, batch, megabatch, margin, sizes, data, optimizer,
eval) is in configs/paraphrase.py, the family's file; this is its "avg".

Command:
  paraflax train --config configs/avg.py --workdir runs/avg
  paraflax eval-sts --workdir runs/avg
Time (2 CPU cores, 2026-11-21): train 106 s, eval-sts 4 s.
Results (Pearson x 100, best STSb.dev-tuning checkpoint, step 400):
  STSb dev 64.63, STSb test 57.63, SICK train 60.07,
  STS12-15 mean 52.91, size-weighted 56.16
  (per year: STS12 44.92, STS13 37.28, STS14 56.90, STS15 63.89).
"""
from configs import paraphrase


def get_config():
  return paraphrase.get_config("avg")
