"""Bilingual sentence embeddings by autoencoding (Kim et al. 2019).

Two BiLSTM encoders with the same shape and their own parameters, one per
side, embed a sentence as the element-wise max over their states. One LSTM
decoder without attention, shared by both, starts from that embedding and
reads the target sentence: from the source embedding it translates, from the
target embedding it autoencodes. Having to serve one decoder pulls a sentence
and its translation to embeddings the decoder reads alike.
"""
from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

SIDES = ("src", "tgt")  # source encoder, target encoder (and decoder) side


def word_embedding_key(side: str) -> str:
  """The params key of a side's word embeddings (flax names a dict member
  `<attribute>_<key>`)."""
  return f"embeds_{side}"


def masked_max(states_BxLxD: jax.Array, lengths_B: jax.Array) -> jax.Array:
  """Element-wise max over the first `lengths` positions; padding never wins.

  An empty sentence (a padding row) embeds to zero instead of -inf.
  """
  mask_BxLx1 = (jnp.arange(states_BxLxD.shape[1])[None, :]
                < lengths_B[:, None])[..., None]
  pooled_BxD = jnp.max(jnp.where(mask_BxLx1, states_BxLxD, -jnp.inf), axis=1)
  return jnp.where(lengths_B[:, None] > 0, pooled_BxD, 0.0)


def _bilstm(hidden: int) -> nn.Bidirectional:
  return nn.Bidirectional(nn.RNN(nn.OptimizedLSTMCell(hidden)),
                          nn.RNN(nn.OptimizedLSTMCell(hidden)))


DECODER_STARTS = ("bridge", "embedding")


class BilingualAutoencoder(nn.Module):
  """Embeddings are [B, 2 * hidden]; the decoder has `hidden` units
  (decoder_start="bridge") or 2 * hidden ("embedding")."""
  src_vocab: int
  tgt_vocab: int
  word_dim: int = 512
  hidden: int = 512
  # Also feed the embedding to the decoder at every step; the paper only
  # starts the decoder from it.
  feed_embedding: bool = False
  # The decoder's initial state: "bridge", h0 = tanh(W emb + b) and c0 = 0;
  # "embedding", h0 = emb and c0 = 0 (Kim et al. 2019, Eq. 3: the decoder
  # starts from the sentence embedding itself).
  decoder_start: str = "bridge"

  def setup(self):
    if self.decoder_start not in DECODER_STARTS:
      raise ValueError(f"decoder_start={self.decoder_start!r}; use one of "
                       f"{DECODER_STARTS}.")
    self.embeds = {"src": nn.Embed(self.src_vocab, self.word_dim),
                   "tgt": nn.Embed(self.tgt_vocab, self.word_dim)}
    self.encoders = {side: _bilstm(self.hidden) for side in SIDES}
    if self.decoder_start == "bridge":
      self.bridge = nn.Dense(self.hidden)
      units = self.hidden
    else:
      units = 2 * self.hidden
    self.decoder = nn.RNN(nn.OptimizedLSTMCell(units))
    self.logits = nn.Dense(self.tgt_vocab)

  def embed(self, ids_BxL: jax.Array, lengths_B: jax.Array, side: str
            ) -> jax.Array:
    """Sentence embeddings [B, 2H] from the `side` encoder."""
    if side not in SIDES:
      raise ValueError(f"unknown side {side!r}; use one of {SIDES}.")
    states_BxLx2H = self.encoders[side](self.embeds[side](ids_BxL),
                                        seq_lengths=lengths_B)
    return masked_max(states_BxLx2H, lengths_B)

  def decode(self, emb_Bx2H: jax.Array, tgt_in_BxT: jax.Array) -> jax.Array:
    """Teacher-forced logits [B, T, V]; `tgt_in` starts with BOS."""
    if self.decoder_start == "bridge":
      h_BxH = jnp.tanh(self.bridge(emb_Bx2H))
    else:
      h_BxH = emb_Bx2H
    x_BxTxE = self.embeds["tgt"](tgt_in_BxT)
    if self.feed_embedding:
      x_BxTxE = jnp.concatenate([x_BxTxE, jnp.broadcast_to(
          emb_Bx2H[:, None], x_BxTxE.shape[:2] + emb_Bx2H.shape[1:])], -1)
    states_BxTxH = self.decoder(x_BxTxE,
                                initial_carry=(jnp.zeros_like(h_BxH), h_BxH))
    return self.logits(states_BxTxH)

  def __call__(self, src_BxS: jax.Array, src_len_B: jax.Array,
               tgt_in_BxT: jax.Array, ae_BxT: jax.Array, ae_len_B: jax.Array,
               ae_in_BxT: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Logits [B, T, V] of translation (source encoder) and autoencoding
    (target encoder of `ae`); both decoder inputs have one width T."""
    emb_Bx2xD = jnp.stack([self.embed(src_BxS, src_len_B, "src"),
                           self.embed(ae_BxT, ae_len_B, "tgt")], 1)
    tgt_Bx2xT = jnp.stack([tgt_in_BxT, ae_in_BxT], 1)
    b, _, t = tgt_Bx2xT.shape
    # Both objectives in one decoder pass. Stacked on axis 1, not
    # concatenated on the batch axis, so each device keeps its own rows.
    logits = self.decode(emb_Bx2xD.reshape(2 * b, -1),
                         tgt_Bx2xT.reshape(2 * b, t)).reshape(b, 2, t, -1)
    return logits[:, 0], logits[:, 1]
