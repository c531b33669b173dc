r"""LSTM-avg (Wieting et al. 2017): the mean of a forward LSTM's hidden states
over the word vectors, trained with the margin loss and hardest
in-megabatch negatives on the 19,432 human English pairs of
`paraphrase_en_human`, random init. Every setting is configs/paraphrase.py's
"lstmavg" (its megabatch of 40 is paraflax's choice; the paper's setting
is configs/papers/wieting2017.py:lstmavg).

Command:
  paraflax train --config configs/lstmavg.py --workdir runs/lstmavg
  paraflax eval-sts --workdir runs/lstmavg
Time: train 339 s, eval-sts 12 s on 2 CPU cores.
Result (Pearson x 100, best STSb.dev-tuning checkpoint, step 480):
  STS12-15 mean 50.69, STSb dev 63.24, STSb test 53.94, SICK train 54.99.
Docs: docs/paraphrase-embeddings.md.
"""
from configs import paraphrase


def get_config():
  return paraphrase.get_config("lstmavg")
