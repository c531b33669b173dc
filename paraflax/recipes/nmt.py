"""Attention NMT (X -> English) on the one train loop, with dev BLEU.

Subwords come from sentencepiece models trained on the training bitext
(joint or one per side, from the config) and kept in the workdir
(`sentencepiece_vocab.pair`); the training pairs are streamed into the
workdir's encoded cache and batches read their rows from there
(`data/streamed_bitext.py`).
"""
from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from jax.sharding import Mesh

from paraflax import errors
from paraflax import losses
from paraflax.data import bitext
from paraflax.data import sentencepiece_vocab
from paraflax.decoding import translator as translator_lib
from paraflax.evaluation import evaluators
from paraflax.models import nmt
from paraflax.recipes import workdir as workdir_lib
from paraflax.training import checkpointing
from paraflax.training import loop
from paraflax.training import optimizers
from paraflax.training import partitioning


# How the summed token loss of a batch is divided: by its target tokens, or
# by its sentences (OpenNMT-py's default `normalization: sents`), which weighs
# long sentences more and makes gradients ~(tokens per sentence) times larger
# before clipping.
NORMALIZE = ("tokens", "sentences")


def make_model(config: ml_collections.ConfigDict, src_vocab: int,
               tgt_vocab: int) -> nmt.AttentionNMT:
  settings = config.model.to_dict()
  return nmt.AttentionNMT(src_vocab=src_vocab, tgt_vocab=tgt_vocab,
                          bridge_type=settings.pop("bridge"), **settings)


def init_params(model: nmt.AttentionNMT, key: jax.Array) -> Any:
  ids = jnp.zeros((1, 8), jnp.int32)
  return model.init(key, ids, jnp.ones((1,), jnp.int32), ids)["params"]


class NMTRecipe:
  """Model, loss, batches and dev BLEU for `paraflax train`; decodes over
  `mesh` (default: the config's)."""

  batch_axis = 0
  local_batches = True  # the stream reads this process's rows only
  updates_per_call = 1

  def __init__(self, config: ml_collections.ConfigDict, src_sp, tgt_sp,
               stream: bitext.BucketStream | None,
               mesh: Mesh | None = None):
    self.config = config
    self.model = make_model(config, src_sp.get_piece_size(),
                            tgt_sp.get_piece_size())
    self.tx = optimizers.make(config.optimizer, config.train_steps)
    self.stream = stream
    self.select_metric = config.select
    self.translator = translator_lib.from_config(config, self.model, src_sp,
                                                 tgt_sp, mesh)

  def init_state(self, key: jax.Array) -> dict[str, Any]:
    params = init_params(self.model, key)
    return {"step": jnp.zeros((), jnp.int32), "params": params,
            "opt": self.tx.init(params)}

  def _loss(self, params, batch):
    logits = self.model.apply({"params": params}, batch["src"],
                              batch["src_len"], batch["tgt_in"])
    mask = (jnp.arange(batch["tgt_out"].shape[1])[None]
            < batch["tgt_len"][:, None])
    total, count = losses.token_cross_entropy(
        logits, batch["tgt_out"], mask, self.config.loss.label_smoothing)
    if self.config.loss.normalize == "sentences":
      return total / jnp.maximum(jnp.sum(batch["tgt_len"] > 0), 1), count
    return total / jnp.maximum(count, 1.0), count

  def train_step(self, state, batch: dict[str, jax.Array], key: jax.Array):
    del key  # no dropout yet
    state, loss, tokens, grad_norm = loop.gradient_step(
        self.tx, self._loss, state, batch)
    return state, {"loss": loss, "grad_norm": grad_norm,
                   "target_tokens": tokens}

  def batches(self, start_step: int) -> Iterator[dict[str, np.ndarray]]:
    return self.stream.from_step(start_step)

  def evaluate(self, params: Any) -> dict[str, float]:
    return evaluators.run_in_training(self.config.evals, evaluators.Model(
        translate=self.translator.translate_texts(params)),
        dev=self.config.data.dev)


def check(config: ml_collections.ConfigDict, files: bool) -> None:
  """`config_check`'s part for this family: its evaluators and loss and,
  with `files`, bitext that names files."""
  from paraflax.data import specs  # pylint: disable=g-import-not-at-top
  if files:
    specs.train_specs(config.data)
  evaluators.settings_of(config.evals, config.data.dev)
  if config.loss.normalize not in NORMALIZE:
    raise errors.ConfigError(
        f"loss.normalize={config.loss.normalize!r}; use one of "
        f"{', '.join(NORMALIZE)}.")


def build(config: ml_collections.ConfigDict, workdir: str, mesh: Mesh
          ) -> NMTRecipe:
  """Streams the bitext of `config.data.train` into the workdir's subword
  models and encoded cache (`streamed_bitext`), and returns the recipe,
  whose batches read their rows from the cache."""
  from paraflax.data import specs  # pylint: disable=g-import-not-at-top
  from paraflax.data import bitext_parts  # pylint: disable=g-import-not-at-top
  from paraflax.data import streamed_bitext  # pylint: disable=g-import-not-at-top
  multiple = bitext.width_multiple(config)
  dev = specs.pairs(config.data.dev) if config.data.dev else []
  if bitext_parts.count(config) > 1:  # each process reads its own parts
    stream, src_sp, tgt_sp = bitext_parts.train_stream(
        config, workdir, ("source", "target"), dev, mesh.size,
        partitioning.process())
  else:
    data, src_sp, tgt_sp = streamed_bitext.train_bitext(
        config, workdir, ("source", "target"), dev)
    stream = bitext.BucketStream(data, config.batch_size, mesh.size,
                                 config.seed, sort_by=config.data.sort_by,
                                 width_multiple=multiple,
                                 process=partitioning.process())
  workdir_lib.save_config(workdir, config)
  return NMTRecipe(config, src_sp, tgt_sp, stream, mesh)


def with_decode(config: ml_collections.ConfigDict,
                settings: Sequence[str]) -> ml_collections.ConfigDict:
  """`config` with `KEY=VALUE` settings of its `decode` block (e.g.
  max_output_ratio=0), each value of the type the key holds."""
  for item in settings:
    key, _, value = item.partition("=")
    if key not in config.decode or not value:
      raise errors.ConfigError(
          f"--decode {item!r}: give KEY=VALUE, KEY one of "
          f"{', '.join(sorted(config.decode))}.")
    kind = type(config.decode[key])
    try:
      config.decode[key] = kind(value)
    except ValueError:
      what = {int: "a whole number", float: "a number"}.get(kind,
                                                             kind.__name__)
      raise errors.ConfigError(
          f"--decode {item!r}: {key} takes {what} (it is "
          f"{config.decode[key]!r} in the workdir's config).") from None
  return config


def load_translator(workdir: str, mesh: Mesh | None = None,
                    max_len: int | None = None, decode: Sequence[str] = ()
                    ) -> tuple[translator_lib.Translator, Any, int]:
  """The best checkpoint's translator, decoding over `mesh` (default: the
  config's), its parameters and their step. Sources over `max_len`
  subwords (default: the config's data.max_len, the longest it trained
  on) are cut to it; the attention reads sources of any length. `decode`
  (`KEY=VALUE`, see `with_decode`) changes the config's decoding settings
  for this translator only; the workdir keeps its config."""
  if max_len is not None and max_len < 2:
    raise errors.ConfigError(f"--max-len {max_len}: give at least 2 "
                             "subwords (one and the EOS).")
  config = with_decode(workdir_lib.load_config(workdir, "nmt"), decode)
  src_sp, tgt_sp = sentencepiece_vocab.load_pair(workdir)
  # The model and its parameters only: no recipe, no optimizer.
  model = make_model(config, src_sp.get_piece_size(), tgt_sp.get_piece_size())
  found = translator_lib.from_config(config, model, src_sp, tgt_sp, mesh)
  if max_len is not None:
    found.max_len = max_len
  params, step = checkpointing.restore_params_only(
      workdir, functools.partial(init_params, model))
  return found, params, step


def updates_per_call(config: ml_collections.ConfigDict) -> int:
  del config  # one update per step, whatever the settings
  return NMTRecipe.updates_per_call
