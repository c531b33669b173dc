r"""de -> en attention NMT (GRU, additive attention) on all shared bitext
of the pair, dev BLEU on newstest2013 (first 500 lines during training).

Command:
  paraflax train --config configs/nmt_de_en.py --workdir runs/nmt_de_en
  paraflax translate --workdir runs/nmt_de_en --input F --output OUT --beam 5
Time and BLEU: not measured yet (see the issue notes).
"""
from paraflax.recipes import nmt_config


def get_config():
  return nmt_config.base("de")
