r"""de-en bilingual sentence embeddings by autoencoding (Kim et al. 2019):
German and English BiLSTM encoders (max-pooled), one attention-free decoder
into English; translation and English autoencoding 1:1 in every batch, on all
shared de-en bitext. Dev: newstest2013 loss and alignment recovery (first
1000 pairs).

Command:
  paraflax train --config configs/bilingual_de_en.py --workdir runs/bi_de_en
  paraflax embed --workdir runs/bi_de_en --input F --output OUT --lang de
  paraflax eval-bilingual --workdir runs/bi_de_en
Measured on 2 CPU cores (2026-11-21), 2,000 steps: 2,450 s (40:50).
Dev alignment accuracy (%) at steps 500 / 1000 / 1500 / 2000:
2.1 / 3.6 / 4.0 / 4.5; far from converged.
Tables: README, "Bilingual embeddings".
"""
from paraflax.recipes import bilingual_config


def get_config():
  return bilingual_config.base("de")
