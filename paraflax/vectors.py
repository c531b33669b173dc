"""Unit vectors and cosine similarity, the one copy every room uses."""
from __future__ import annotations

import jax
import jax.numpy as jnp


def normalize(x_NxD: jax.Array, eps: float = 1e-8) -> jax.Array:
  # Through the squared norm: the gradient of `norm` at a zero vector (an
  # empty sentence, a padding row) is NaN, and NaN * weight 0 is still NaN.
  sq_N = jnp.sum(jnp.square(x_NxD), axis=-1, keepdims=True)
  return x_NxD * jax.lax.rsqrt(jnp.maximum(sq_N, eps * eps))


def cosine(a_NxD: jax.Array, b_NxD: jax.Array) -> jax.Array:
  """Row-wise cosine of aligned rows: [N]."""
  return jnp.sum(normalize(a_NxD) * normalize(b_NxD), axis=-1)
