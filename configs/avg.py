r"""Avg (Wieting et al. 2017): the mean of the word vectors, trained with the
margin loss and hardest in-megabatch negatives on the 19,432 human English
pairs of `paraphrase_en_human`, words from random init. Every setting is
configs/paraphrase.py's "avg" (the paper's, at 2-core scale).

Command:
  paraflax train --config configs/avg.py --workdir runs/avg
  paraflax eval-sts --workdir runs/avg
Time: train 106 s, eval-sts 4 s on 2 CPU cores.
Result (Pearson x 100, best STSb.dev-tuning checkpoint, step 400):
  STS12-15 mean 52.91, STSb dev 64.63, STSb test 57.63, SICK train 60.07.
Docs: docs/paraphrase-embeddings.md.
"""
from configs import paraphrase


def get_config():
  return paraphrase.get_config("avg")
