r"""LSTM-avg (Wieting et al. 2017): the mean of a forward LSTM's hidden states
over the word vectors, trained with the margin loss and hardest
in-megabatch negatives on the 19,432 human English pairs of
`paraphrase_en_human`, random init. Every setting is configs/paraphrase.py's
"lstmavg" (its megabatch of 40 is paraflax's choice; the paper's setting
is configs/papers/wieting2017.py:lstmavg).

Command:
  paraflax train --config configs/lstmavg.py --workdir runs/lstmavg
  paraflax eval-sts --workdir runs/lstmavg
Time and result of the run kept as lab/results/runs/sts_encoders/lstmavg,
on {sts_encoders/lstmavg.hardware=AMD EPYC, 2 cores}:
  {sts_encoders/lstmavg.time=2 min 26 s (4 min 5 s of CPU), fresh clone, caches warm from the steps before it, in one clone after 4 min 13 s of other runs' steps} for both commands;
  Pearson x 100 of the best STSb.dev-tuning checkpoint, step {sts_encoders/lstmavg.step=480}:
  STS12-15 mean {sts_encoders/lstmavg.sts12_15=51.85},
  STSb dev {sts_encoders/lstmavg.stsb_dev=64.10},
  STSb test {sts_encoders/lstmavg.stsb_test=55.66},
  SICK train {sts_encoders/lstmavg.sick_train=55.07}.
Docs: docs/paraphrase-embeddings.md.
"""
from configs import paraphrase


def get_config():
  return paraphrase.get_config("lstmavg")
