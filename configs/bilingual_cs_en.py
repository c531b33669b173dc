r"""cs-en bilingual sentence embeddings by autoencoding (Kim et al. 2019):
Czech and English BiLSTM encoders (max-pooled), one attention-free decoder
into English; translation and English autoencoding 1:1 in every batch, on all
shared cs-en bitext. Dev: newstest2013 loss and alignment recovery (first
1000 pairs).

Command:
  paraflax train --config configs/bilingual_cs_en.py --workdir runs/bi_cs_en
  paraflax embed --workdir runs/bi_cs_en --input F --output OUT --lang cs
  paraflax eval-bilingual --workdir runs/bi_cs_en
Measured on 2 CPU cores (2026-11-21), 2,000 steps: 2,288 s (38:08).
Dev alignment accuracy (%) at steps 500 / 1000 / 1500 / 2000:
0.5 / 1.2 / 1.6 / 3.3; far from converged.
Tables: README, "Bilingual embeddings".
"""
from paraflax.recipes import bilingual_config


def get_config():
  return bilingual_config.base("cs")
