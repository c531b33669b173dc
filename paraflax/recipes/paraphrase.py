"""Paraphrastic sentence embeddings (Wieting et al. 2017) on the train loop.

One jitted train step is one megabatch: embed every sentence of the M
mini-batches with the current parameters, choose each pair's negatives on
device, then make M optimizer updates (a `lax.scan`), as in Wieting's code
where negatives are refreshed once per megabatch.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from jax.sharding import Mesh

from paraflax import errors
from paraflax import losses
from paraflax.data import batching
from paraflax.data import pairs as pairs_lib
from paraflax.data import words
from paraflax.evaluation import evaluators
from paraflax.models import encoders
from paraflax.recipes import paraphrase_data
from paraflax.recipes import workdir as workdir_lib
from paraflax.training import checkpointing
from paraflax.training import optimizers

VOCAB_FILE = "vocab.txt"
WORD_VECTORS_FILE = "word_vectors.txt"
_EMBED_BATCH = 512


def make_model(config: ml_collections.ConfigDict, vocab_size: int
               ) -> nn.Module:
  kwargs = {k: v for k, v in config.model.items()
            if k not in ("name", "word_vectors")}
  return encoders.make(config.model.name, vocab_size, **kwargs)


def _is_word_embedding(path) -> bool:
  return any(getattr(k, "key", None) == encoders.WORD_EMBED for k in path)


def regularizer(params: Any, anchor: jax.Array | None, lambda_w: float,
                lambda_c: float) -> jax.Array:
  """lambda_c ||composition||^2 + lambda_w ||W_words - W_initial||^2."""
  total = jnp.zeros(())
  for path, leaf in jax.tree_util.tree_leaves_with_path(params):
    if _is_word_embedding(path):
      if lambda_w and anchor is not None:
        total += lambda_w * jnp.sum(jnp.square(leaf - anchor))
    elif lambda_c:
      total += lambda_c * jnp.sum(jnp.square(leaf))
  return total


class Embedder:
  """Text in, embeddings out, for a trained (or initialised) encoder."""

  def __init__(self, model: nn.Module, vocab: words.WordVocab, max_len: int):
    self.model, self.vocab, self.max_len = model, vocab, max_len
    self._apply = jax.jit(lambda p, i, n: model.apply({"params": p}, i, n))

  def __call__(self, params: Any, texts: Sequence[str]) -> np.ndarray:
    """[N, D] float32 in input order; batches are sorted by length."""
    seqs = [self.vocab.encode(t) for t in texts]
    batching.report_longer([len(s) for s in seqs], self.max_len, "words")
    seqs = [s[:self.max_len] for s in seqs]
    out = None
    for rows, ids, lengths in batching.sorted_batches(seqs, _EMBED_BATCH):
      emb = np.asarray(self._apply(params, ids, lengths))[:len(rows)]
      if out is None:
        out = np.zeros((len(texts), emb.shape[1]), np.float32)
      out[rows] = emb
    return out


def init_params(model: nn.Module, key: jax.Array) -> Any:
  ids = jnp.zeros((1, 8), jnp.int32)
  return model.init(key, ids, jnp.ones((1,), jnp.int32))["params"]


def updates_per_call(config: ml_collections.ConfigDict) -> int:
  """One optimizer update per mini-batch of a megabatch."""
  return config.megabatch


class ParaphraseRecipe:
  """Model, loss, batches and evaluation for `paraflax train`."""

  batch_axis = 1  # megabatches are [M, B, ...]; B is split over devices
  local_batches = True  # the stream reads this process's columns only

  def __init__(self, config: ml_collections.ConfigDict,
               vocab: words.WordVocab,
               stream: pairs_lib.MegabatchStream | None,
               anchor_init: np.ndarray | None = None):
    self.config = config
    self.vocab = vocab
    self.model = make_model(config, len(vocab))
    self.tx = optimizers.make(config.optimizer, config.train_steps)
    self.stream = stream
    self.updates_per_call = updates_per_call(config)
    self.anchor_init = anchor_init
    self.select_metric = config.select
    self.embedder = Embedder(self.model, vocab, config.data.max_len)
    # Saved configs from before length groups existed pad every row.
    self.length_groups = config.length_groups
    self.shards = stream.shards if stream is not None else 1

  def init_params(self, key: jax.Array) -> Any:
    params = init_params(self.model, key)
    if self.anchor_init is not None:
      params[encoders.WORD_EMBED]["embedding"] = jnp.asarray(
          self.anchor_init)
    return params

  def init_state(self, key: jax.Array) -> dict[str, Any]:
    params = self.init_params(key)
    state = {"step": jnp.zeros((), jnp.int32), "params": params,
             "opt": self.tx.init(params)}
    if self.config.loss.lambda_w:
      state["anchor"] = params[encoders.WORD_EMBED]["embedding"]
    return state

  def _embed(self, params, ids, lengths):
    # Words looked up once, outside the length groups: one gradient of the
    # word table per update, not one per group.
    variables = {"params": params}
    x = self.model.apply(variables, ids, method="words")
    return encoders.embed_by_length(
        lambda x_g, n: self.model.apply(
            variables, x_g, n, method="compose"),
        x, lengths, self.length_groups, self.shards)

  def _loss(self, params, anchor, mb: dict[str, jax.Array]):
    # Stacked on a new axis 1, not concatenated on the batch axis: each
    # device keeps its own rows, where a concatenation would reshuffle them.
    ids_Bx4xL = jnp.stack([mb["a"], mb["b"], mb["neg_a"], mb["neg_b"]], 1)
    len_Bx4 = jnp.stack([mb["a_len"], mb["b_len"], mb["neg_a_len"],
                         mb["neg_b_len"]], 1)
    b, _, length = ids_Bx4xL.shape
    emb_Bx4xD = self._embed(params, ids_Bx4xL.reshape(4 * b, length),
                            len_Bx4.reshape(4 * b)).reshape(b, 4, -1)
    s1, s2, t1, t2 = (emb_Bx4xD[:, i] for i in range(4))
    cfg = self.config.loss
    margin = losses.margin_loss(s1, s2, t1, t2, mb["weight"] * mb["has_neg"],
                                cfg.margin)
    return margin + regularizer(params, anchor, cfg.lambda_w, cfg.lambda_c)

  def train_step(self, state, mb: dict[str, jax.Array], key: jax.Array):
    m, b, _ = mb["a"].shape
    # Flattened pair-major ([B, M] -> [B*M]): the batch axis is split over
    # devices, and this order keeps every device's rows contiguous, so the
    # megabatch embedding is sharded instead of replicated on every device.
    flat = {k: v.swapaxes(0, 1).reshape((b * m,) + v.shape[2:])
            for k, v in mb.items()}
    frozen = jax.lax.stop_gradient(state["params"])
    # Both sides in one call, stacked pair-major like the loss's four sets,
    # so that the length groups draw on all 2*B*M sentences.
    length = flat["a"].shape[1]
    emb_Nx2xD = self._embed(
        frozen, jnp.stack([flat["a"], flat["b"]], 1).reshape(-1, length),
        jnp.stack([flat["a_len"], flat["b_len"]], 1).reshape(-1)
    ).reshape(b * m, 2, -1)
    emb_a, emb_b = emb_Nx2xD[:, 0], emb_Nx2xD[:, 1]
    neg_a, neg_b, has_neg = losses.choose_negatives(
        emb_a, emb_b, flat["a_uid"], flat["b_uid"], flat["weight"] > 0, key,
        self.config.loss.sampling)
    cand_ids = jnp.concatenate([flat["a"], flat["b"]])
    cand_len = jnp.concatenate([flat["a_len"], flat["b_len"]])
    flat.update(neg_a=cand_ids[neg_a], neg_a_len=cand_len[neg_a],
                neg_b=cand_ids[neg_b], neg_b_len=cand_len[neg_b],
                has_neg=has_neg.astype(jnp.float32))
    xs = {k: v.reshape((b, m) + v.shape[1:]).swapaxes(0, 1)
          for k, v in flat.items() if not k.endswith("_uid")}
    anchor = state.get("anchor")

    def update(carry, mini):
      params, opt = carry
      loss, grads = jax.value_and_grad(self._loss)(params, anchor, mini)
      updates, opt = self.tx.update(grads, opt, params)
      return (optax.apply_updates(params, updates), opt), (
          loss, optax.tree.norm(grads))

    (params, opt), (loss, grad_norm) = jax.lax.scan(
        update, (state["params"], state["opt"]), xs)
    new_state = dict(state, step=state["step"] + m, params=params, opt=opt)
    return new_state, {"loss": loss.mean(), "grad_norm": grad_norm.max()}

  def batches(self, start_step: int) -> Iterator[dict[str, np.ndarray]]:
    return self.stream.from_step(start_step)

  def evaluate(self, params: Any) -> dict[str, float]:
    return evaluators.run_in_training(self.config.evals, evaluators.Model(
        embed=lambda texts, lang: self.embedder(params, texts)))


def save_workdir_files(workdir: str, config: ml_collections.ConfigDict,
                       vocab: words.WordVocab) -> None:
  workdir_lib.save_config(workdir, config)
  vocab.save(os.path.join(workdir, VOCAB_FILE))


def load_for_inference(workdir: str) -> tuple[Embedder, Any, int]:
  """The embedder and the best (else newest) parameters of a workdir,
  restored alone: no training recipe, no optimizer."""
  config = workdir_lib.load_config(workdir, "paraphrase")
  vocab = words.WordVocab.load(os.path.join(workdir, VOCAB_FILE))
  model = make_model(config, len(vocab))
  params, step = checkpointing.restore_params_only(
      workdir, lambda key: init_params(model, key))
  return Embedder(model, vocab, config.data.max_len), params, step


def check(config: ml_collections.ConfigDict, files: bool) -> None:
  """`config_check`'s part for this family: the pairs it names and, with
  `files`, that its word vectors exist."""
  paraphrase_data.check(config)
  vectors = config.model.word_vectors
  if files and vectors and not os.path.isfile(vectors):
    raise errors.ConfigError(
        f"model.word_vectors={vectors!r}: no such file. Write PPDB vectors "
        "there with `paraflax train --config configs/ppdb_words.py "
        "--workdir runs/ppdb_words && paraflax export-words --workdir "
        "runs/ppdb_words`, or start from random words with "
        "--config.model.word_vectors=''.")


def build(config: ml_collections.ConfigDict, workdir: str, mesh: Mesh
          ) -> ParaphraseRecipe:
  """A recipe ready for the train loop, reading its megabatches from the
  workdir's encoded cache of `config.data`'s pairs
  (`paraphrase_data.vocab_and_stream`)."""
  vectors = config.model.word_vectors
  vocab, stream = paraphrase_data.vocab_and_stream(config, workdir, mesh,
                                                   VOCAB_FILE)
  return _recipe(config, workdir, vocab, stream, vectors)


def _recipe(config: ml_collections.ConfigDict, workdir: str,
            vocab: words.WordVocab, stream: Any, vectors: str
            ) -> ParaphraseRecipe:
  anchor_init = None
  if vectors:
    table, found = words.load_word_vectors(vectors, vocab,
                                           config.model.word_dim)
    anchor_init = words.fill_missing(table, found, config.seed)
  save_workdir_files(workdir, config, vocab)
  return ParaphraseRecipe(config, vocab, stream, anchor_init)
