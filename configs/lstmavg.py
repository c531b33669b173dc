r"""lstmavg: paraphrastic sentence embeddings on the human English pairs.

Command:
  paraflax train --config configs/lstmavg.py --workdir /tmp/lstmavg
  paraflax eval-sts --workdir /tmp/lstmavg
Time and results: filled in below from a measured run.
"""
from paraflax.recipes import paraphrase_config


def get_config():
  return paraphrase_config.base("lstmavg")
