"""Attention encoder-decoder after Bahdanau et al. 2014 / Sennrich et al. 2016.

A bidirectional RNN encodes the source; an RNN decoder attends over it with
additive attention. `decode_step` advances one token, so the same parameters
serve teacher-forced training (`__call__`, an `nn.scan` over target
positions) and beam search (a cache = encoder states + decoder carry).
"""
from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

CELLS = {"gru": nn.GRUCell, "lstm": nn.OptimizedLSTMCell}
_MASKED = -1e9
Encoded = dict[str, jax.Array]  # states [B,S,2H], keys [B,S,A], mask [B,S]


def _hidden(carry: Any) -> jax.Array:
  """The output state of a GRU (h) or LSTM ((c, h)) carry."""
  return carry[1] if isinstance(carry, tuple) else carry


class AttentionDecoderCell(nn.Module):
  """One decoder step: attend with the previous state, update, read out."""
  hidden: int
  attention_dim: int
  emb_dim: int
  vocab_size: int
  cell: str = "gru"

  @nn.compact
  def __call__(self, carry, y_prev_BxE: jax.Array, encoded: Encoded):
    query_BxA = nn.Dense(self.attention_dim, name="query")(_hidden(carry))
    energy_BxS = nn.Dense(1, use_bias=False, name="energy")(
        jnp.tanh(encoded["keys"] + query_BxA[:, None]))[..., 0]
    energy_BxS = jnp.where(encoded["mask"], energy_BxS, _MASKED)
    weights_BxS = jax.nn.softmax(energy_BxS, axis=-1)
    context_BxC = jnp.einsum("bs,bsc->bc", weights_BxS, encoded["states"])
    carry, h_BxH = CELLS[self.cell](self.hidden, name="rnn")(
        carry, jnp.concatenate([y_prev_BxE, context_BxC], -1))
    readout_BxE = jnp.tanh(nn.Dense(self.emb_dim, name="readout")(
        jnp.concatenate([h_BxH, context_BxC, y_prev_BxE], -1)))
    return carry, nn.Dense(self.vocab_size, name="logits")(readout_BxE)


class AttentionNMT(nn.Module):
  src_vocab: int
  tgt_vocab: int
  emb_dim: int = 256
  hidden: int = 256
  attention_dim: int = 256
  cell: str = "gru"

  def setup(self):
    if self.cell not in CELLS:
      raise ValueError(f"unknown cell {self.cell!r}; set model.cell to one "
                       f"of {sorted(CELLS)}.")
    rnn = CELLS[self.cell]
    self.src_embed = nn.Embed(self.src_vocab, self.emb_dim)
    self.tgt_embed = nn.Embed(self.tgt_vocab, self.emb_dim)
    self.encoder = nn.Bidirectional(nn.RNN(rnn(self.hidden)),
                                    nn.RNN(rnn(self.hidden)))
    self.keys = nn.Dense(self.attention_dim, use_bias=False)
    self.bridge = nn.Dense(self.hidden)
    self.decoder = AttentionDecoderCell(self.hidden, self.attention_dim,
                                        self.emb_dim, self.tgt_vocab,
                                        self.cell)

  def encode(self, src_BxS: jax.Array, src_len_B: jax.Array) -> Encoded:
    mask_BxS = jnp.arange(src_BxS.shape[1])[None] < src_len_B[:, None]
    states = self.encoder(self.src_embed(src_BxS), seq_lengths=src_len_B)
    return {"states": states, "keys": self.keys(states), "mask": mask_BxS}

  def init_carry(self, encoded: Encoded):
    """Decoder start state: tanh(W mean(encoder states)) (Sennrich 2016)."""
    mask = encoded["mask"][..., None]
    mean_BxC = jnp.sum(encoded["states"] * mask, 1) / jnp.maximum(
        jnp.sum(mask, 1), 1)
    h_BxH = jnp.tanh(self.bridge(mean_BxC))
    return (jnp.zeros_like(h_BxH), h_BxH) if self.cell == "lstm" else h_BxH

  def decode_step(self, encoded: Encoded, carry, prev_B: jax.Array):
    """Logits [B, V] for the next token given the previous one."""
    carry, logits_BxV = self.decoder(carry, self.tgt_embed(prev_B), encoded)
    return logits_BxV, carry

  def __call__(self, src_BxS: jax.Array, src_len_B: jax.Array,
               tgt_in_BxT: jax.Array) -> jax.Array:
    """Teacher-forced logits [B, T, V]; `tgt_in` starts with BOS."""
    encoded = self.encode(src_BxS, src_len_B)

    def body(module, carry, y_prev_BxE, enc):
      return module.decoder(carry, y_prev_BxE, enc)

    scan = nn.scan(body, variable_broadcast="params",
                   split_rngs={"params": False}, in_axes=(1, nn.broadcast),
                   out_axes=1)
    _, logits_BxTxV = scan(self, self.init_carry(encoded),
                           self.tgt_embed(tgt_in_BxT), encoded)
    return logits_BxTxV
