r"""Avg (Wieting et al. 2017): the mean of the word vectors, trained with the
margin loss and hardest in-megabatch negatives on the 19,432 human English
pairs of `paraphrase_en_human`, words from random init. Every setting is
configs/paraphrase.py's "avg" (its megabatch of 40 is paraflax's choice;
the paper's setting is configs/papers/wieting2017.py:avg).

Command:
  paraflax train --config configs/avg.py --workdir runs/avg
  paraflax eval-sts --workdir runs/avg
Time and result of the run kept as lab/results/runs/sts_encoders/avg,
on {sts_encoders/avg.hardware=AMD EPYC, 2 cores}:
  {sts_encoders/avg.time=58 s (1 min 35 s of CPU), fresh clone, cold caches} for both commands;
  Pearson x 100 of the best STSb.dev-tuning checkpoint, step {sts_encoders/avg.step=1,600}:
  STS12-15 mean {sts_encoders/avg.sts12_15=54.06},
  STSb dev {sts_encoders/avg.stsb_dev=65.65},
  STSb test {sts_encoders/avg.stsb_test=59.35},
  SICK train {sts_encoders/avg.sick_train=60.87}.
Docs: docs/paraphrase-embeddings.md.
"""
from configs import paraphrase


def get_config():
  return paraphrase.get_config("avg")
