"""Defaults shared by the X -> English NMT configs."""
from __future__ import annotations

import ml_collections

from paraflax.training import config as loop_config

# Bitext with an English side, per language (see `paraflax tasks`).
TRAIN_TASKS = {
    "de": ("bitext_multi30k_de_en", "bitext_newstest_pool_de_en",
           "bitext_opennmt_wmt_de_en"),
    "fr": ("bitext_multi30k_fr_en", "bitext_newstest_pool_fr_en"),
    "cs": ("bitext_multi30k_cs_en", "bitext_newstest_pool_cs_en"),
}


def bitext_data(lang: str) -> ml_collections.ConfigDict:
  """All shared bitext of `lang`-en; dev pairs from newstest2013."""
  return ml_collections.ConfigDict({
      "train_tasks": TRAIN_TASKS[lang],
      "dev_task": f"bitext_newstest_dev_{lang}_en",
      "dev_split": "newstest2013",
      "max_len": 64,  # subwords incl. EOS
      "too_long": "skip",  # skip | truncate | error (pairs over max_len)
  })


def subword_vocab() -> ml_collections.ConfigDict:
  # joint: one sentencepiece model for both sides.
  return ml_collections.ConfigDict(
      {"joint": True, "size": 8000, "model_type": "unigram"})


def adam() -> ml_collections.ConfigDict:
  return ml_collections.ConfigDict({"learning_rate": 1e-3, "clip_norm": 1.0})


def base(lang: str) -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.recipe = "nmt"
  c.seed = 0
  c.train_steps = 6000
  c.batch_size = 64

  c.data = bitext_data(lang)
  c.vocab = subword_vocab()

  # The paper used 620 / 1000; these sizes train on 2 CPU cores.
  c.model = ml_collections.ConfigDict()
  c.model.emb_dim = 256
  c.model.hidden = 256
  c.model.attention_dim = 256
  c.model.cell = "gru"  # gru | lstm

  c.loss = ml_collections.ConfigDict()
  c.loss.label_smoothing = 0.1

  c.optimizer = adam()

  c.decode = ml_collections.ConfigDict()
  c.decode.alpha = 0.6  # length normalisation ((5 + |Y|) / 6) ** alpha
  c.decode.max_output = 100  # subwords

  c.eval = ml_collections.ConfigDict()
  c.eval.beam = 4
  c.eval.sentences = 500  # first N dev pairs for BLEU during training
  c.update(loop_config.loop_config(eval_every=1000, log_every=100,
                                   checkpoint_every=500))
  return c
