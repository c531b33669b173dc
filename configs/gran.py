r"""gran: paraphrastic sentence embeddings on the human English pairs.

Command:
  paraflax train --config configs/gran.py --workdir /tmp/gran
  paraflax eval-sts --workdir /tmp/gran
Time and results: filled in below from a measured run.
"""
from paraflax.recipes import paraphrase_config


def get_config():
  return paraphrase_config.base("gran")
