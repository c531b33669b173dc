r"""fr -> en attention NMT (GRU, additive attention) on all shared bitext
of the pair, dev BLEU on newstest2013 (first 500 lines during training).

Command:
  paraflax train --config configs/nmt_fr_en.py --workdir runs/nmt_fr_en
  paraflax translate --workdir runs/nmt_fr_en --input F --output OUT --beam 5
Measured (2 CPU cores, 2026-11-21), a run cut at 2000 of 6000 steps
(--config.train_steps=2000 --config.eval_every=500): 2,663 s, with other
jobs on the same cores part of the time; dev BLEU (first 500 lines, beam 4)
0.62 / 1.57 / 3.12 / 4.88 at steps 500-2000, still rising; full
newstest2013, beam 5: BLEU 4.0
(nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0). Not converged.
"""
from paraflax.recipes import nmt_config


def get_config():
  return nmt_config.base("fr")
