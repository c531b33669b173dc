"""Attention encoder-decoder after Bahdanau et al. 2014 / Sennrich et al. 2016.

A bidirectional RNN encodes the source; an RNN decoder attends over it with
additive attention. `decode_step` advances one token, so the same parameters
serve teacher-forced training (`__call__`, an `nn.scan` over target
positions) and beam search (a cache = encoder states + decoder carry).

Two choices follow OpenNMT-py's `rnn` decoder when set:
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
from flax.linen import recurrent

BRIDGES = ("mean_tanh", "final")
_MASKED = -1e9
# states [B,S,2H], keys [B,S,A], mask [B,S]; with bridge "final" also the
# final carries of both directions, concatenated: final_h [B,2H] (and
# final_c [B,2H] for an LSTM).
Encoded = dict[str, jax.Array]
# A cell's fused weights: w_i [I, G*H], b_i, w_h [H, G*H], b_h.
Weights = dict[str, jax.Array]


def _dense(features: int, width: int, init, use_bias: bool, name: str):
  """The kernel and bias (None without) of an `nn.Dense` from `width`
  inputs: same names, shapes and initialisers, read whole to be fused."""
  return recurrent.DenseParams(features, use_bias=use_bias, kernel_init=init,
                               name=name)(jnp.zeros((width,)))


def _fuse(parts) -> tuple[jax.Array, jax.Array | None]:
  kernels, biases = zip(*parts)
  bias = (None if any(b is None for b in biases)
          else jnp.concatenate(biases))
  return jnp.concatenate(kernels, -1), bias


class GRU(nn.Module):
  """`nn.GRUCell`'s parameters (ir iz in, hr hz hn) and function, with its
  three input products fused into one and its three hidden ones into
  another. The input side has no recurrence, so `project` runs it for all
  timesteps at once; a step is then one [B,H] x [H,3H] product."""
  features: int

  @nn.compact
  def weights(self, in_features: int) -> Weights:
    h = self.features
    w_i, b_i = _fuse([_dense(h, in_features, nn.initializers.lecun_normal(),
                             True, f"i{g}") for g in "rzn"])
    hidden = [_dense(h, h, nn.initializers.orthogonal(), g == "n", f"h{g}")
              for g in "rzn"]
    w_h, _ = _fuse([(k, None) for k, _ in hidden])
    return {"w_i": w_i, "b_i": b_i, "w_h": w_h, "b_h": hidden[2][1]}

  @staticmethod
  def zero_carry(batch: int, features: int) -> jax.Array:
    return jnp.zeros((batch, features))

  @staticmethod
  def step(w: Weights, h: jax.Array, x_proj: jax.Array
           ) -> tuple[jax.Array, jax.Array]:
    """One step from the input's projection (`project`) [..., 3H]."""
    xr, xz, xn = jnp.split(x_proj, 3, -1)
    hr, hz, hn = jnp.split(jnp.matmul(h, w["w_h"]), 3, -1)
    r = jax.nn.sigmoid(xr + hr)
    z = jax.nn.sigmoid(xz + hz)
    n = jnp.tanh(xn + r * (hn + w["b_h"]))
    h = (1.0 - z) * n + z * h
    return h, h


class LSTM(nn.Module):
  """`nn.OptimizedLSTMCell`'s parameters (ii if ig io, hi hf hg ho) and
  function, fused as `GRU` is; the carry is (c, h)."""
  features: int

  @nn.compact
  def weights(self, in_features: int) -> Weights:
    h = self.features
    w_i, _ = _fuse([_dense(h, in_features, nn.initializers.lecun_normal(),
                           False, f"i{g}") for g in "ifgo"])
    w_h, b_h = _fuse([_dense(h, h, nn.initializers.orthogonal(), True,
                             f"h{g}") for g in "ifgo"])
    return {"w_i": w_i, "b_i": jnp.zeros_like(b_h), "w_h": w_h, "b_h": b_h}

  @staticmethod
  def zero_carry(batch: int, features: int) -> tuple[jax.Array, jax.Array]:
    return jnp.zeros((batch, features)), jnp.zeros((batch, features))

  @staticmethod
  def step(w: Weights, carry: tuple[jax.Array, jax.Array],
           x_proj: jax.Array):
    c, h = carry
    gates = jnp.matmul(h, w["w_h"]) + w["b_h"] + x_proj
    i, f, g, o = jnp.split(gates, 4, -1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    h = jax.nn.sigmoid(o) * jnp.tanh(c)
    return (c, h), h


CELLS = {"gru": GRU, "lstm": LSTM}


def project(w: Weights, x: jax.Array) -> jax.Array:
  """The input side of a cell's gates, for any leading axes."""
  return jnp.matmul(x, w["w_i"]) + w["b_i"]


def _hidden(carry: Any) -> jax.Array:
  """The output state of a GRU (h) or LSTM ((c, h)) carry."""
  return carry[1] if isinstance(carry, tuple) else carry


class _Direction(nn.Module):
  """One direction's cell, at `nn.RNN`'s parameter path (<rnn>/cell)."""
  cell: nn.Module

  def weights(self, in_features: int) -> Weights:
    return self.cell.weights(in_features)


class BidirectionalEncoder(nn.Module):
  """`nn.Bidirectional(nn.RNN(cell), nn.RNN(cell))` with `seq_lengths`
  (same parameters, states and final carries), run as one scan: both
  directions advance together in one batched product per step, and the
  input side of every step is projected before the loop."""
  cell: str
  hidden: int

  def setup(self):
    self.forward_rnn = _Direction(CELLS[self.cell](self.hidden))
    self.backward_rnn = _Direction(CELLS[self.cell](self.hidden))

  def __call__(self, x_BxSxE: jax.Array, len_B: jax.Array):
    """((forward final carry, backward final carry), states [B,S,2H])."""
    flip = lambda a: recurrent.flip_sequences(a, len_B, 1, False)
    fw = self.forward_rnn.weights(x_BxSxE.shape[-1])
    bw = self.backward_rnn.weights(x_BxSxE.shape[-1])
    # [S, 2, B, G*H]: time-major, the backward direction reads its tokens
    # last to first (padding stays at the end, as nn.RNN's reverse).
    xs = jnp.stack([project(fw, x_BxSxE), flip(project(bw, x_BxSxE))])
    w = jax.tree.map(lambda f, b: jnp.stack([f, b]), fw, bw)
    w["b_h"] = w["b_h"][:, None]  # broadcast over the batch rows
    cell = CELLS[self.cell]
    carry = jax.tree.map(lambda a: jnp.stack([a, a]),
                         cell.zero_carry(x_BxSxE.shape[0], self.hidden))

    def body(carry, x_2xBxG):
      carry, h = cell.step(w, carry, x_2xBxG)
      return carry, (carry, h)

    _, (carries, hs) = jax.lax.scan(body, carry, jnp.moveaxis(xs, 2, 0))
    # nn.RNN's final carry with seq_lengths: the one after the last real
    # token (index -1, the last step, for an empty row).
    rows = jnp.arange(len_B.shape[0])
    last = jax.tree.map(lambda a: a[len_B - 1, :, rows], carries)
    finals = tuple(jax.tree.map(lambda a, d=d: a[:, d], last)
                   for d in range(2))
    states = jnp.concatenate([jnp.moveaxis(hs[:, 0], 0, 1),
                              flip(jnp.moveaxis(hs[:, 1], 0, 1))], -1)
    return finals, states


def attend(query: nn.Dense, energy: nn.Dense, state_BxH: jax.Array,
           encoded: Encoded) -> jax.Array:
  """Additive attention's context [B, 2H]; padding gets no weight. A state
  [B, K, H] (K beams of each input) reads its input's encoder states [B, S,
  ...] as they are, broadcast over the beams, instead of K copies."""
  query_BxA = query(state_BxH)
  beams = tuple(range(1, state_BxH.ndim - 1))  # () or (1,)
  keys = jnp.expand_dims(encoded["keys"], beams)
  energy_BxS = energy(jnp.tanh(keys + query_BxA[..., None, :]))[..., 0]
  energy_BxS = jnp.where(jnp.expand_dims(encoded["mask"], beams), energy_BxS,
                         _MASKED)
  weights_BxS = jax.nn.softmax(energy_BxS, axis=-1)
  return jnp.einsum("b...s,bsc->b...c", weights_BxS, encoded["states"])


class AttentionDecoderCell(nn.Module):
  """One decoder step. Bahdanau order: attend with the previous state,
  update, read out. With `input_feeding` (OpenNMT-py's InputFeedRNNDecoder,
  "mlp" attention): update on [y_prev; previous attentional vector], attend
  with the new state, attentional vector = W [context; h] (no tanh, as
  OpenNMT's mlp attention), logits from it; the carry is (rnn carry, vector).

  The step is split so that teacher forcing keeps only the recurrence in
  its scan: `inputs` (the previous token's share of the RNN's gates) runs
  for all positions before it, `output` (readout and the vocabulary
  projection, half the train step) for all positions after it, each as one
  large product.
  """
  hidden: int
  attention_dim: int
  emb_dim: int
  vocab_size: int
  cell: str = "gru"
  input_feeding: bool = False
  context_dim: int | None = None  # the encoder states' width; None: 2 * hidden

  def setup(self):
    self.query = nn.Dense(self.attention_dim)
    self.energy = nn.Dense(1, use_bias=False)
    self.rnn = CELLS[self.cell](self.hidden)
    if self.input_feeding:
      self.attentional = nn.Dense(self.hidden)
    else:
      self.readout = nn.Dense(self.emb_dim)
    self.logits = nn.Dense(self.vocab_size)

  def rnn_weights(self) -> Weights:
    """The RNN's weights, its input kernel split (outside any loop) into the
    previous token's rows (w_y) and the fed vector's (w_fed)."""
    # The RNN reads [y_prev; attentional vector] or [y_prev; context].
    fed = self.hidden if self.input_feeding else (self.context_dim
                                                  or 2 * self.hidden)
    w = dict(self.rnn.weights(self.emb_dim + fed))
    w_i = w.pop("w_i")
    return dict(w, w_y=w_i[:self.emb_dim], w_fed=w_i[self.emb_dim:])

  def inputs(self, w: Weights, y_prev_xE: jax.Array) -> jax.Array:
    """The previous token's share of the gates [..., G*H], bias included."""
    return y_prev_xE @ w["w_y"] + w["b_i"]

  def recur(self, w: Weights, carry, y_proj_BxG: jax.Array, encoded: Encoded):
    """(carry, features) of one step from `inputs`' row."""
    fed_w = w["w_fed"]
    step = CELLS[self.cell].step
    if self.input_feeding:
      rnn_carry, feed_BxH = carry
      rnn_carry, h_BxH = step(w, rnn_carry, y_proj_BxG + feed_BxH @ fed_w)
      context_BxC = attend(self.query, self.energy, h_BxH, encoded)
      attentional_BxH = self.attentional(
          jnp.concatenate([context_BxC, h_BxH], -1))
      return (rnn_carry, attentional_BxH), attentional_BxH
    context_BxC = attend(self.query, self.energy, _hidden(carry), encoded)
    carry, h_BxH = step(w, carry, y_proj_BxG + context_BxC @ fed_w)
    return carry, jnp.concatenate([h_BxH, context_BxC], -1)

  def output(self, features: jax.Array, y_prev_xE: jax.Array) -> jax.Array:
    """Logits [..., V] from `recur`'s features."""
    if self.input_feeding:
      return self.logits(features)
    return self.logits(jnp.tanh(self.readout(
        jnp.concatenate([features, y_prev_xE], -1))))

  def __call__(self, carry, y_prev_BxE: jax.Array, encoded: Encoded):
    w = self.rnn_weights()
    carry, features = self.recur(w, carry, self.inputs(w, y_prev_BxE),
                                 encoded)
    return carry, self.output(features, y_prev_BxE)


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
  # Units of each encoder direction; None: `hidden` (OpenNMT-py's brnn
  # splits `hidden` over the two: hidden // 2).
  encoder_hidden: int | None = None

  def setup(self):
    if self.cell not in CELLS:
      raise ValueError(f"unknown cell {self.cell!r}; set model.cell to one "
                       f"of {sorted(CELLS)}.")
    if self.bridge_type not in BRIDGES:
      raise ValueError(f"unknown bridge {self.bridge_type!r}; set model.bridge "
                       f"to one of {list(BRIDGES)}.")
    self.src_embed = nn.Embed(self.src_vocab, self.emb_dim)
    self.tgt_embed = nn.Embed(self.tgt_vocab, self.emb_dim)
    per_direction = self.encoder_hidden or self.hidden
    self.encoder = BidirectionalEncoder(self.cell, per_direction)
    self.keys = nn.Dense(self.attention_dim, use_bias=False)
    self.bridge = nn.Dense(self.hidden)
    if self.bridge_type == "final" and self.cell == "lstm":
      self.bridge_c = nn.Dense(self.hidden)
    self.decoder = AttentionDecoderCell(self.hidden, self.attention_dim,
                                        self.emb_dim, self.tgt_vocab,
                                        self.cell, self.input_feeding,
                                        2 * per_direction)

  def encode(self, src_BxS: jax.Array, src_len_B: jax.Array) -> Encoded:
    mask_BxS = jnp.arange(src_BxS.shape[1])[None] < src_len_B[:, None]
    (forward, backward), states = self.encoder(self.src_embed(src_BxS),
                                               src_len_B)
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
    """Logits [B, V] for the next token given the previous one; with prev
    [B, K] and carry leaves [B, K, ...] (beams), logits [B, K, V]."""
    carry, logits_BxV = self.decoder(carry, self.tgt_embed(prev_B), encoded)
    return logits_BxV, carry

  def __call__(self, src_BxS: jax.Array, src_len_B: jax.Array,
               tgt_in_BxT: jax.Array) -> jax.Array:
    """Teacher-forced logits [B, T, V]; `tgt_in` starts with BOS."""
    return self.decoder.output(*self.features(src_BxS, src_len_B,
                                              tgt_in_BxT))

  def features(self, src_BxS: jax.Array, src_len_B: jax.Array,
               tgt_in_BxT: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The decoder's teacher-forced features [B, T, F] before the output
    layer, and the previous tokens' embeddings [B, T, E] it also reads."""
    encoded = self.encode(src_BxS, src_len_B)
    y_prev_BxTxE = self.tgt_embed(tgt_in_BxT)
    w = self.decoder.rnn_weights()

    def body(module, carry, y_proj_BxG, w, enc):
      return module.decoder.recur(w, carry, y_proj_BxG, enc)

    scan = nn.scan(body, variable_broadcast="params",
                   split_rngs={"params": False},
                   in_axes=(1, nn.broadcast, nn.broadcast), out_axes=1)
    _, features_BxTxF = scan(self, self.init_carry(encoded),
                             self.decoder.inputs(w, y_prev_BxTxE), w, encoded)
    return features_BxTxF, y_prev_BxTxE
