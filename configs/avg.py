r"""avg: paraphrastic sentence embeddings on the human English pairs.

Command:
  paraflax train --config configs/avg.py --workdir /tmp/avg
  paraflax eval-sts --workdir /tmp/avg
Time and results: filled in below from a measured run.
"""
from paraflax.recipes import paraphrase_config


def get_config():
  return paraphrase_config.base("avg")
