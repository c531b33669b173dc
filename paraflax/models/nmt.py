"""Attention encoder-decoder after Bahdanau et al. 2014 / Sennrich et al. 2016.

A bidirectional RNN encodes the source; an RNN decoder attends over it with
additive attention. `decode_step` advances one token, so the same parameters
serve teacher-forced training (`__call__`, an `nn.scan` over target
positions) and beam search (a cache = encoder states + decoder carry).

Two choices follow OpenNMT-py's `rnn` decoder when set (issue 17):
`input_feeding` (Luong et al. 2015: the RNN first, then attention with its new
state, and the attentional vector fed back as input at the next step) and
`bridge="final"` (the decoder starts from a ReLU layer on the encoder's final
states instead of tanh(W mean(encoder states))).
"""
from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

CELLS = {"gru": nn.GRUCell, "lstm": nn.OptimizedLSTMCell}
BRIDGES = ("mean_tanh", "final")
_MASKED = -1e9
# states [B,S,2H], keys [B,S,A], mask [B,S]; with bridge "final" also the
# final carries of both directions, concatenated: final_h [B,2H] (and
# final_c [B,2H] for an LSTM).
Encoded = dict[str, jax.Array]


def _hidden(carry: Any) -> jax.Array:
  """The output state of a GRU (h) or LSTM ((c, h)) carry."""
  return carry[1] if isinstance(carry, tuple) else carry


def _attend(query: nn.Dense, energy: nn.Dense, state_BxH: jax.Array,
            encoded: Encoded) -> jax.Array:
  """Additive attention's context [B, 2H]; padding gets no weight."""
  query_BxA = query(state_BxH)
  energy_BxS = energy(jnp.tanh(encoded["keys"] + query_BxA[:, None]))[..., 0]
  energy_BxS = jnp.where(encoded["mask"], energy_BxS, _MASKED)
  weights_BxS = jax.nn.softmax(energy_BxS, axis=-1)
  return jnp.einsum("bs,bsc->bc", weights_BxS, encoded["states"])


class AttentionDecoderCell(nn.Module):
  """One decoder step. Bahdanau order: attend with the previous state,
  update, read out. With `input_feeding` (OpenNMT-py's InputFeedRNNDecoder,
  "mlp" attention): update on [y_prev; previous attentional vector], attend
  with the new state, attentional vector = W [context; h] (no tanh, as
  OpenNMT's mlp attention), logits from it; the carry is (rnn carry, vector).
  """
  hidden: int
  attention_dim: int
  emb_dim: int
  vocab_size: int
  cell: str = "gru"
  input_feeding: bool = False

  @nn.compact
  def __call__(self, carry, y_prev_BxE: jax.Array, encoded: Encoded):
    query = nn.Dense(self.attention_dim, name="query")
    energy = nn.Dense(1, use_bias=False, name="energy")
    rnn = CELLS[self.cell](self.hidden, name="rnn")
    if self.input_feeding:
      rnn_carry, feed_BxH = carry
      rnn_carry, h_BxH = rnn(rnn_carry,
                             jnp.concatenate([y_prev_BxE, feed_BxH], -1))
      context_BxC = _attend(query, energy, h_BxH, encoded)
      attentional_BxH = nn.Dense(self.hidden, name="attentional")(
          jnp.concatenate([context_BxC, h_BxH], -1))
      logits_BxV = nn.Dense(self.vocab_size, name="logits")(attentional_BxH)
      return (rnn_carry, attentional_BxH), logits_BxV
    context_BxC = _attend(query, energy, _hidden(carry), encoded)
    carry, h_BxH = rnn(carry, jnp.concatenate([y_prev_BxE, context_BxC], -1))
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
  input_feeding: bool = False
  # A BRIDGES name (config key model.bridge; the submodule is `bridge`).
  bridge_type: str = "mean_tanh"

  def setup(self):
    if self.cell not in CELLS:
      raise ValueError(f"unknown cell {self.cell!r}; set model.cell to one "
                       f"of {sorted(CELLS)}.")
    if self.bridge_type not in BRIDGES:
      raise ValueError(f"unknown bridge {self.bridge_type!r}; set model.bridge "
                       f"to one of {list(BRIDGES)}.")
    rnn = CELLS[self.cell]
    self.src_embed = nn.Embed(self.src_vocab, self.emb_dim)
    self.tgt_embed = nn.Embed(self.tgt_vocab, self.emb_dim)
    self.encoder = nn.Bidirectional(nn.RNN(rnn(self.hidden)),
                                    nn.RNN(rnn(self.hidden)))
    self.keys = nn.Dense(self.attention_dim, use_bias=False)
    self.bridge = nn.Dense(self.hidden)
    if self.bridge_type == "final" and self.cell == "lstm":
      self.bridge_c = nn.Dense(self.hidden)
    self.decoder = AttentionDecoderCell(self.hidden, self.attention_dim,
                                        self.emb_dim, self.tgt_vocab,
                                        self.cell, self.input_feeding)

  def encode(self, src_BxS: jax.Array, src_len_B: jax.Array) -> Encoded:
    mask_BxS = jnp.arange(src_BxS.shape[1])[None] < src_len_B[:, None]
    (forward, backward), states = self.encoder(
        self.src_embed(src_BxS), seq_lengths=src_len_B, return_carry=True)
    encoded = {"states": states, "keys": self.keys(states), "mask": mask_BxS}
    if self.bridge_type == "final":  # carries at each direction's last real token
      encoded["final_h"] = jnp.concatenate([_hidden(forward),
                                            _hidden(backward)], -1)
      if self.cell == "lstm":
        encoded["final_c"] = jnp.concatenate([forward[0], backward[0]], -1)
    return encoded

  def init_carry(self, encoded: Encoded):
    """Decoder start state: tanh(W mean(encoder states)) (Sennrich 2016), or
    with bridge "final" ReLU(W [final forward; final backward]) (OpenNMT-py's
    bridge, also on an LSTM's cell state); with input feeding, paired with a
    zero attentional vector."""
    if self.bridge_type == "final":
      h_BxH = jax.nn.relu(self.bridge(encoded["final_h"]))
      c_BxH = (jax.nn.relu(self.bridge_c(encoded["final_c"]))
               if self.cell == "lstm" else None)
    else:
      mask = encoded["mask"][..., None]
      mean_BxC = jnp.sum(encoded["states"] * mask, 1) / jnp.maximum(
          jnp.sum(mask, 1), 1)
      h_BxH = jnp.tanh(self.bridge(mean_BxC))
      c_BxH = jnp.zeros_like(h_BxH)
    carry = (c_BxH, h_BxH) if self.cell == "lstm" else h_BxH
    return (carry, jnp.zeros_like(h_BxH)) if self.input_feeding else carry

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
