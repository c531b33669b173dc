r"""de-en bilingual sentence embeddings by autoencoding (Kim et al. 2019):
German and English BiLSTM encoders (max-pooled), one attention-free decoder
into English; translation and English autoencoding 1:1 in every batch, on all
shared de-en bitext. Dev: newstest2013 loss and alignment recovery (first
1000 pairs).

Command:
  paraflax train --config configs/bilingual_de_en.py --workdir runs/bi_de_en
  paraflax embed --workdir runs/bi_de_en --input F --output OUT --lang de
Not yet trained: no measured run time or results.
"""
from paraflax.recipes import bilingual_config


def get_config():
  return bilingual_config.base("de")
