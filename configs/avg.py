r"""Avg (Wieting et al. 2017): the mean of the word vectors, trained with the
margin loss and hardest in-megabatch negatives on the 19,432 human English
pairs of `paraphrase_en_human`, words from random init. Every setting is
configs/paraphrase.py's "avg" (its megabatch of 40 is paraflax's choice;
the paper's setting is configs/papers/wieting2017.py:avg).

Command:
  paraflax train --config configs/avg.py --workdir runs/avg
  paraflax eval-sts --workdir runs/avg
Time: 2 min 34 s of CPU for both commands (2 cores of an AMD EPYC).
Result (Pearson x 100, best STSb.dev-tuning checkpoint, step 1,600):
  STS12-15 mean 54.06, STSb dev 65.65, STSb test 59.35, SICK train 60.87.
Docs: docs/paraphrase-embeddings.md.
"""
from configs import paraphrase


def get_config():
  return paraphrase.get_config("avg")
