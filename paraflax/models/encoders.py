"""Sentence encoders of Wieting et al.: Avg, LSTM-avg and GRAN.

Each maps word ids [B, L] with lengths [B] to sentence embeddings [B, D];
padding positions never contribute.
"""
from __future__ import annotations

from collections.abc import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

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
