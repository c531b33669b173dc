"""Defaults shared by the paraphrase-embedding configs (Wieting et al. 2017:
batch 100, megabatch 40, margin 0.4, Adam 1e-3)."""
from __future__ import annotations

import ml_collections

from paraflax.training import config as loop_config


def base(encoder: str) -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.recipe = "paraphrase"
  c.seed = 0
  c.train_steps = 2000  # optimizer updates; a multiple of megabatch
  c.batch_size = 100
  c.megabatch = 40  # mini-batches whose sentences supply the negatives

  c.data = ml_collections.ConfigDict()
  c.data.task = "paraphrase_en_human"  # seqio Task or Mixture of pairs
  c.data.split = "train"
  c.data.max_len = 40  # words; longer sentences are truncated (and counted)
  c.data.vocab_min_count = 1
  c.data.vocab_max_size = 0  # 0: no limit

  c.model = ml_collections.ConfigDict()
  c.model.name = encoder  # avg | lstmavg | gran
  c.model.word_dim = 300
  if encoder != "avg":
    c.model.hidden = 300
  c.model.word_vectors = ""  # GloVe/word2vec text file; "" = random init

  c.loss = ml_collections.ConfigDict()
  c.loss.margin = 0.4
  c.loss.sampling = "max"  # max | mix | rand
  c.loss.scramble = 0.0  # probability of shuffling a sentence's words
  c.loss.lambda_w = 0.0  # L2 pull of word vectors to their initial values
  c.loss.lambda_c = 0.0  # L2 on composition parameters

  c.optimizer = ml_collections.ConfigDict()
  c.optimizer.learning_rate = 1e-3

  c.eval = ml_collections.ConfigDict()
  c.eval.select = "STSb.dev-tuning"  # best checkpoint by its Pearson r
  c.eval.sets = ("STSb.dev-tuning",)
  c.update(loop_config.loop_config(eval_every=400, log_every=40,
                                   checkpoint_every=400))
  return c
