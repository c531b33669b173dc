"""Heads on top of sentence embeddings."""
from __future__ import annotations

import flax.linen as nn
import jax


class MLPHead(nn.Module):
  """Logit of "x and y are translations" from [x; y].

  The first layer W [x; y] + b is held as W_src x + b and W_tgt y (the same
  function), so that a grid of pairs projects each row once and only the
  later layers run per pair.
  """
  hidden: int = 512
  layers: int = 2

  def setup(self):
    self.src_in = nn.Dense(self.hidden)
    self.tgt_in = nn.Dense(self.hidden, use_bias=False)
    self.deeper = [nn.Dense(self.hidden) for _ in range(self.layers - 1)]
    self.out = nn.Dense(1)

  def project_src(self, x_NxD: jax.Array) -> jax.Array:
    return self.src_in(x_NxD)

  def project_tgt(self, y_NxD: jax.Array) -> jax.Array:
    return self.tgt_in(y_NxD)

  def tail(self, h_NxH: jax.Array) -> jax.Array:
    """Logits from first-layer pre-activations (any leading shape)."""
    h_NxH = nn.relu(h_NxH)
    for dense in self.deeper:
      h_NxH = nn.relu(dense(h_NxH))
    return self.out(h_NxH)[..., 0]

  def __call__(self, x_NxD: jax.Array, y_NxD: jax.Array) -> jax.Array:
    return self.tail(self.project_src(x_NxD) + self.project_tgt(y_NxD))


class RefClassifier(nn.Module):
  """Logits [B, 2] of (translation, reference) for sentences [B, L]: a
  sentence encoder (encoders.py: Avg, LSTM-avg) and one softmax layer."""
  encoder: nn.Module  # (ids [B, L], lengths [B]) -> [B, D]

  @nn.compact
  def __call__(self, ids_BxL: jax.Array, lengths_B: jax.Array) -> jax.Array:
    return nn.Dense(2, name="softmax")(self.encoder(ids_BxL, lengths_B))
