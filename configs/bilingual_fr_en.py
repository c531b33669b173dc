r"""fr-en bilingual sentence embeddings by autoencoding (Kim et al. 2019):
French and English BiLSTM encoders (max-pooled), one attention-free decoder
into English; translation and English autoencoding 1:1 in every batch, on all
shared fr-en bitext. Dev: newstest2013 loss and alignment recovery (first
1000 pairs).

Command:
  paraflax train --config configs/bilingual_fr_en.py --workdir runs/bi_fr_en
  paraflax embed --workdir runs/bi_fr_en --input F --output OUT --lang fr
  paraflax eval-bilingual --workdir runs/bi_fr_en
Measured on 2 CPU cores (2026-11-21), 2,000 steps: 2,558 s (42:38;
the test suite shared the cores for 15 min).
Dev alignment accuracy (%) at steps 500 / 1000 / 1500 / 2000:
2.5 / 5.7 / 6.7 / 6.9; far from converged.
Tables: README, "Bilingual embeddings".
"""
from paraflax.recipes import bilingual_config


def get_config():
  return bilingual_config.base("fr")
