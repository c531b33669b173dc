r"""LSTM-avg: the mean of a forward LSTM's hidden states over the word
vectors, trained with the margin loss and hardest in-megabatch negatives on
the 19,432 human English pairs of `paraphrase_en_human`, random init.

Every setting (steps, batch, megabatch, margin, sizes, data, optimizer,
eval) is in configs/paraphrase.py, the family's file; this is its "lstmavg".

Command:
  paraflax train --config configs/lstmavg.py --workdir runs/lstmavg
  paraflax eval-sts --workdir runs/lstmavg
Time (2 CPU cores, 2026-11-21): train 339 s, eval-sts 12 s.
Results (Pearson x 100, best STSb.dev-tuning checkpoint, step 480):
  STSb dev 63.24, STSb test 53.94, SICK train 54.99,
  STS12-15 mean 50.69, size-weighted 53.45
  (per year: STS12 43.69, STS13 35.61, STS14 53.44, STS15 62.03).
"""
from configs import paraphrase


def get_config():
  return paraphrase.get_config("lstmavg")
