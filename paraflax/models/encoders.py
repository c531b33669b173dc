"""Sentence encoders of Wieting et al.: Avg, LSTM-avg and GRAN.

Each maps word ids [B, L] with lengths [B] to sentence embeddings [B, D];
padding positions never contribute.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from paraflax.data import batching

WORD_EMBED = "word_embed"  # the name the word-vector L2 pull looks for
# (SentenceEncoder.word_embed)


def masked_mean(x_BxLxD: jax.Array, lengths_B: jax.Array) -> jax.Array:
  mask_BxL = jnp.arange(x_BxLxD.shape[1])[None, :] < lengths_B[:, None]
  total_BxD = jnp.sum(x_BxLxD * mask_BxL[..., None], axis=1)
  # An empty sentence (or a padding row) embeds to zero instead of NaN.
  return total_BxD / jnp.maximum(lengths_B, 1)[:, None].astype(x_BxLxD.dtype)


class SentenceEncoder(nn.Module):
  """Word vectors, then a composition of them; the two steps are apart so
  that `embed_by_length` looks the words up once for all its groups (one
  gradient of the word table, not one per group)."""
  vocab_size: int
  word_dim: int = 300

  def setup(self):
    self.word_embed = nn.Embed(self.vocab_size, self.word_dim)
    self.setup_composition()

  def setup_composition(self) -> None:
    pass

  def words(self, ids_BxL: jax.Array) -> jax.Array:
    return self.word_embed(ids_BxL)

  def compose(self, x_BxLxD: jax.Array, lengths_B: jax.Array) -> jax.Array:
    raise NotImplementedError

  def __call__(self, ids_BxL: jax.Array, lengths_B: jax.Array) -> jax.Array:
    return self.compose(self.words(ids_BxL), lengths_B)


def _lstm(encoder: SentenceEncoder) -> nn.RNN:
  """A forward LSTM whose cell is the encoder's `OptimizedLSTMCell_0`, the
  name checkpoints written before `SentenceEncoder` have its weights under."""
  # pylint: disable-next=invalid-name
  encoder.OptimizedLSTMCell_0 = nn.OptimizedLSTMCell(encoder.hidden)
  return nn.RNN(encoder.OptimizedLSTMCell_0)


class Avg(SentenceEncoder):
  """Mean of the word vectors."""

  def compose(self, x_BxLxD: jax.Array, lengths_B: jax.Array) -> jax.Array:
    return masked_mean(x_BxLxD, lengths_B)


class LSTMAvg(SentenceEncoder):
  """Mean of the hidden states of a forward LSTM over the word vectors."""
  hidden: int = 300

  def setup_composition(self) -> None:
    self.lstm = _lstm(self)

  def compose(self, x_BxLxD: jax.Array, lengths_B: jax.Array) -> jax.Array:
    return masked_mean(self.lstm(x_BxLxD, seq_lengths=lengths_B), lengths_B)


class GRAN(SentenceEncoder):
  """Gated recurrent averaging: a_t = x_t * gate(W_x x_t + W_h h_t + b).

  `gate` is a module attribute so that a gate fixed at one (a test) turns the
  GRAN into Avg with the same word vectors.
  """
  hidden: int = 300
  gate: Callable[[jax.Array], jax.Array] = nn.sigmoid

  def setup_composition(self) -> None:
    self.lstm = _lstm(self)
    self.gate_x = nn.Dense(self.word_dim)
    self.gate_h = nn.Dense(self.word_dim, use_bias=False)

  def compose(self, x_BxLxD: jax.Array, lengths_B: jax.Array) -> jax.Array:
    h_BxLxH = self.lstm(x_BxLxD, seq_lengths=lengths_B)
    z_BxLxD = self.gate_x(x_BxLxD) + self.gate_h(h_BxLxH)
    return masked_mean(x_BxLxD * self.gate(z_BxLxD), lengths_B)


def embed_by_length(compose: Callable[[jax.Array, jax.Array], jax.Array],
                    x_NxLxD: jax.Array, lengths_N: jax.Array, groups: int,
                    shards: int = 1) -> jax.Array:
  """`compose(x_NxLxD, lengths_N)` without paying for most of the padding.

  The rows are sorted by length and cut into `groups` groups of nearly equal
  size; each group runs at the narrowest width (a multiple of
  `batching.QUANTUM`) that holds its longest row, chosen on device by
  `lax.switch`, so at most `L / QUANTUM` shapes compile per group. The
  encoders ignore padding, so the rows come back equal (to float rounding)
  to `compose` on the whole padded batch, in input order. Rows are sorted
  within each of `shards` contiguous blocks (one per device), so sharded
  rows stay on their device.
  """
  n, length = x_NxLxD.shape[:2]
  if groups <= 1:
    return compose(x_NxLxD, lengths_N)
  if n % shards:
    raise ValueError(f"{n} rows do not split into {shards} shards")
  per = n // shards
  len_SxP = lengths_N.reshape(shards, per)
  order_SxP = jnp.argsort(len_SxP, axis=1, stable=True)
  rows = jax.vmap(lambda a, i: a[i])  # a[s][order[s]] for every shard s
  x_SxPxLxD = rows(x_NxLxD.reshape((shards, per) + x_NxLxD.shape[1:]),
                   order_SxP)
  len_SxP = rows(len_SxP, order_SxP)
  widths = sorted({min(w, length) for w in range(
      batching.QUANTUM, length + batching.QUANTUM, batching.QUANTUM)})

  def at_width(width, x_GxLxD, len_G):
    return compose(x_GxLxD[:, :width], len_G)

  branches = [functools.partial(at_width, w) for w in widths]
  bounds = np.linspace(0, per, min(groups, per) + 1).astype(int)
  emb_groups = []
  for lo, hi in zip(bounds[:-1], bounds[1:]):
    longest = jnp.max(len_SxP[:, hi - 1])  # sorted: the last row is longest
    branch = jnp.minimum(jnp.searchsorted(jnp.asarray(widths), longest),
                         len(widths) - 1)
    group = x_SxPxLxD[:, lo:hi]
    emb_GxE = jax.lax.switch(branch, branches,
                             group.reshape((-1,) + group.shape[2:]),
                             len_SxP[:, lo:hi].reshape(-1))
    emb_groups.append(emb_GxE.reshape(shards, hi - lo, -1))
  emb_SxPxE = jnp.concatenate(emb_groups, axis=1)
  return rows(emb_SxPxE, jnp.argsort(order_SxP, axis=1)).reshape(n, -1)


ENCODERS: dict[str, type[SentenceEncoder]] = {
    "avg": Avg,
    "lstmavg": LSTMAvg,
    "gran": GRAN,
}


def make(name: str, vocab_size: int, **kwargs) -> SentenceEncoder:
  if name not in ENCODERS:
    raise ValueError(f"unknown encoder {name!r}; set model.name to one of "
                     f"{sorted(ENCODERS)}.")
  return ENCODERS[name](vocab_size=vocab_size, **kwargs)
