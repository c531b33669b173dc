"""Defaults shared by the bilingual autoencoder configs (Kim et al. 2019)."""
from __future__ import annotations

import ml_collections

from paraflax.recipes import nmt_config
from paraflax.training import config as loop_config


def base(lang: str) -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.recipe = "bilingual"
  c.seed = 0
  # 2,000 steps of 32 pairs (under one epoch of de-en) fit the 30-40 min
  # budget of 2 CPU cores: a step decodes 64 sentences at about the cost of
  # an NMT step (nmt_config, measured 1.2 s).
  c.train_steps = 2000
  c.batch_size = 32  # bitext pairs; as many target sentences are autoencoded
  c.lang = lang  # the language paired with English
  # xx_en: source = lang, target (decoded and autoencoded) = en; or en_xx.
  c.direction = "xx_en"

  c.data = nmt_config.bitext_data(lang)
  # Extra target-language Tasks (feature `text`) for autoencoding only,
  # e.g. ("mono_en_news",) with direction xx_en.
  c.data.mono_tasks = ()
  c.vocab = nmt_config.subword_vocab()

  # The paper: 1 layer, 512. Half that, for 2 CPU cores (embeddings are
  # 2 * hidden = 512).
  c.model = ml_collections.ConfigDict()
  c.model.word_dim = 256
  c.model.hidden = 256  # per encoder direction, and the decoder
  # Also give the embedding to the decoder at every step (as LASER does),
  # not only as its initial state (the paper). On 2,000 steps it is what
  # makes the decoder read the embedding at all: de-en at step 500, dev
  # alignment accuracy 0.0 % and equal AE / NMT losses with the initial
  # state only, 2.1 % and AE below NMT with it.
  c.model.feed_embedding = True

  # Word vector text files (GloVe / word2vec, dim = model.word_dim) per
  # language; a vector initialises the subword that spells its (lowercase)
  # word whole, the other subwords start random. "": all random.
  c.word_vectors = ml_collections.ConfigDict({lang: "", "en": ""})

  c.loss = ml_collections.ConfigDict()
  c.loss.label_smoothing = 0.0

  c.optimizer = nmt_config.adam()

  c.eval = ml_collections.ConfigDict()
  # First N dev pairs: dev loss, and alignment recovery (each source's
  # nearest target by cosine) as dev/align_accuracy, which picks the best.
  c.eval.sentences = 1000
  c.eval.batch_size = 100
  c.update(loop_config.loop_config(eval_every=500, log_every=50,
                                   checkpoint_every=500))
  return c
