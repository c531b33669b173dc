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


def masked_mean(x_BxLxD: jax.Array, lengths_B: jax.Array) -> jax.Array:
  mask_BxL = jnp.arange(x_BxLxD.shape[1])[None, :] < lengths_B[:, None]
  total_BxD = jnp.sum(x_BxLxD * mask_BxL[..., None], axis=1)
  # An empty sentence (or a padding row) embeds to zero instead of NaN.
  return total_BxD / jnp.maximum(lengths_B, 1)[:, None].astype(x_BxLxD.dtype)


class Avg(nn.Module):
  """Mean of the word vectors."""
  vocab_size: int
  word_dim: int = 300

  @nn.compact
  def __call__(self, ids_BxL: jax.Array, lengths_B: jax.Array) -> jax.Array:
    x_BxLxD = nn.Embed(self.vocab_size, self.word_dim, name=WORD_EMBED)(ids_BxL)
    return masked_mean(x_BxLxD, lengths_B)


class LSTMAvg(nn.Module):
  """Mean of the hidden states of a forward LSTM over the word vectors."""
  vocab_size: int
  word_dim: int = 300
  hidden: int = 300

  @nn.compact
  def __call__(self, ids_BxL: jax.Array, lengths_B: jax.Array) -> jax.Array:
    x_BxLxD = nn.Embed(self.vocab_size, self.word_dim, name=WORD_EMBED)(ids_BxL)
    h_BxLxH = nn.RNN(nn.OptimizedLSTMCell(self.hidden), name="lstm")(
        x_BxLxD, seq_lengths=lengths_B)
    return masked_mean(h_BxLxH, lengths_B)


class GRAN(nn.Module):
  """Gated recurrent averaging: a_t = x_t * gate(W_x x_t + W_h h_t + b).

  `gate` is a module attribute so that a gate fixed at one (a test) turns the
  GRAN into Avg with the same word vectors.
  """
  vocab_size: int
  word_dim: int = 300
  hidden: int = 300
  gate: Callable[[jax.Array], jax.Array] = nn.sigmoid

  @nn.compact
  def __call__(self, ids_BxL: jax.Array, lengths_B: jax.Array) -> jax.Array:
    x_BxLxD = nn.Embed(self.vocab_size, self.word_dim, name=WORD_EMBED)(ids_BxL)
    h_BxLxH = nn.RNN(nn.OptimizedLSTMCell(self.hidden), name="lstm")(
        x_BxLxD, seq_lengths=lengths_B)
    z_BxLxD = (nn.Dense(self.word_dim, name="gate_x")(x_BxLxD)
               + nn.Dense(self.word_dim, use_bias=False, name="gate_h")(h_BxLxH))
    return masked_mean(x_BxLxD * self.gate(z_BxLxD), lengths_B)


def embed_by_length(embed: Callable[[jax.Array, jax.Array], jax.Array],
                    ids_NxL: jax.Array, lengths_N: jax.Array, groups: int,
                    shards: int = 1) -> jax.Array:
  """`embed(ids_NxL, lengths_N)` without paying for most of the padding.

  The rows are sorted by length and cut into `groups` groups of nearly equal
  size; each group runs at the narrowest width (a multiple of
  `batching.QUANTUM`) that holds its longest row, chosen on device by
  `lax.switch`, so at most `L / QUANTUM` shapes compile per group. The
  encoders ignore padding, so the rows come back equal (to float rounding)
  to `embed` on the whole padded batch, in input order. Rows are sorted
  within each of `shards` contiguous blocks (one per device), so sharded
  rows stay on their device.
  """
  n, length = ids_NxL.shape
  if groups <= 1:
    return embed(ids_NxL, lengths_N)
  if n % shards:
    raise ValueError(f"{n} rows do not split into {shards} shards")
  per = n // shards
  len_SxP = lengths_N.reshape(shards, per)
  order_SxP = jnp.argsort(len_SxP, axis=1, stable=True)
  ids_SxPxL = jnp.take_along_axis(ids_NxL.reshape(shards, per, length),
                                  order_SxP[..., None], axis=1)
  len_SxP = jnp.take_along_axis(len_SxP, order_SxP, axis=1)
  widths = sorted({min(w, length) for w in range(
      batching.QUANTUM, length + batching.QUANTUM, batching.QUANTUM)})

  def at_width(width, ids_GxL, len_G):
    return embed(ids_GxL[:, :width], len_G)

  branches = [functools.partial(at_width, w) for w in widths]
  bounds = np.linspace(0, per, min(groups, per) + 1).astype(int)
  emb_groups = []
  for lo, hi in zip(bounds[:-1], bounds[1:]):
    longest = jnp.max(len_SxP[:, hi - 1])  # sorted: the last row is longest
    branch = jnp.minimum(jnp.searchsorted(jnp.asarray(widths), longest),
                         len(widths) - 1)
    emb_GxD = jax.lax.switch(branch, branches,
                             ids_SxPxL[:, lo:hi].reshape(-1, length),
                             len_SxP[:, lo:hi].reshape(-1))
    emb_groups.append(emb_GxD.reshape(shards, hi - lo, -1))
  emb_SxPxD = jnp.concatenate(emb_groups, axis=1)
  inverse_SxP = jnp.argsort(order_SxP, axis=1)
  return jnp.take_along_axis(emb_SxPxD, inverse_SxP[..., None],
                             axis=1).reshape(n, -1)


ENCODERS: dict[str, type[nn.Module]] = {
    "avg": Avg,
    "lstmavg": LSTMAvg,
    "gran": GRAN,
}


def make(name: str, vocab_size: int, **kwargs) -> nn.Module:
  if name not in ENCODERS:
    raise ValueError(f"unknown encoder {name!r}; set model.name to one of "
                     f"{sorted(ENCODERS)}.")
  return ENCODERS[name](vocab_size=vocab_size, **kwargs)
