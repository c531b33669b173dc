r"""de -> en attention NMT (GRU, additive attention) on all shared bitext
of the pair, dev BLEU on newstest2013 (first 500 lines during training).

Command:
  paraflax train --config configs/nmt_de_en.py --workdir runs/nmt_de_en
  paraflax translate --workdir runs/nmt_de_en --input F --output OUT --beam 5
Measured (2 CPU cores, 2026-11-21), a first run cut at 2000 of 6000 steps
(--config.train_steps=2000 --config.eval_every=500): 2,429 s; dev BLEU
(first 500 lines, beam 4) 0.14 / 0.39 / 1.24 / 3.09 at steps 500-2000, still
rising; full newstest2013, beam 5: BLEU 3.16
(nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0). Not converged.
"""
from paraflax.recipes import nmt_config


def get_config():
  return nmt_config.base("de")
