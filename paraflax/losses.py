"""The margin loss with in-megabatch negatives (Wieting et al. 2017).

loss = max(0, d - cos(s1,s2) + cos(s1,t1)) + max(0, d - cos(s1,s2) + cos(s2,t2))

t1 and t2 are chosen on device among every sentence of the megabatch (both
sides), never the pair itself, its partner, any exact duplicate of either
(a duplicate is a false negative), either side of a pair that shares a text
with it (pairs (R, T1) and (R, T2): T2 is a paraphrase of R, so a false
negative for R and T1 too) or a padding row.
"""
from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp

from paraflax import vectors

Sampling = Literal["max", "mix", "rand"]
SAMPLING: tuple[str, ...] = ("max", "mix", "rand")


def forbidden_negatives(uid_a_N: jax.Array, uid_b_N: jax.Array,
                        valid_N: jax.Array) -> jax.Array:
  """[N, 2N]: True where candidate j may not be a negative for pair i.

  Candidates are the a-sides then the b-sides. Sentence ids (`uid`) are equal
  exactly when the texts are equal. Pair i forbids both sides of every pair
  that shares a text with it (itself included): that covers self, partner,
  exact duplicates of either, and the partners of those duplicates.
  """
  a_N1, b_N1 = uid_a_N[:, None], uid_b_N[:, None]
  a_1N, b_1N = uid_a_N[None, :], uid_b_N[None, :]
  shares_NxN = (((a_N1 == a_1N) | (a_N1 == b_1N) | (b_N1 == a_1N)
                 | (b_N1 == b_1N))
                | jnp.eye(uid_a_N.shape[0], dtype=bool))
  cand_valid_2N = jnp.concatenate([valid_N, valid_N])
  return jnp.tile(shares_NxN, (1, 2)) | ~cand_valid_2N[None, :]


def choose_negatives(emb_a_NxD: jax.Array, emb_b_NxD: jax.Array,
                     uid_a_N: jax.Array, uid_b_N: jax.Array,
                     valid_N: jax.Array, key: jax.Array,
                     sampling: Sampling = "max"
                     ) -> tuple[jax.Array, jax.Array, jax.Array]:
  """Indices into concat([a, b]) of t1 (for a_i) and t2 (for b_i).

  Also returns a [N] mask of the pairs that have any allowed candidate.
  """
  cand_2NxD = vectors.normalize(jnp.concatenate([emb_a_NxD, emb_b_NxD]))
  forbidden_Nx2N = forbidden_negatives(uid_a_N, uid_b_N, valid_N)
  has_negative_N = ~jnp.all(forbidden_Nx2N, axis=1)

  def pick(emb_NxD, key):
    sim_Nx2N = vectors.normalize(emb_NxD) @ cand_2NxD.T
    hardest_N = jnp.argmax(jnp.where(forbidden_Nx2N, -jnp.inf, sim_Nx2N), 1)
    if sampling == "max":
      return hardest_N
    key_rand, key_mix = jax.random.split(key)
    noise_Nx2N = jax.random.uniform(key_rand, sim_Nx2N.shape)
    random_N = jnp.argmax(jnp.where(forbidden_Nx2N, -1.0, noise_Nx2N), 1)
    if sampling == "rand":
      return random_N
    use_hardest_N = jax.random.bernoulli(key_mix, 0.5, hardest_N.shape)
    return jnp.where(use_hardest_N, hardest_N, random_N)

  if sampling not in SAMPLING:
    raise ValueError(f"unknown negative sampling {sampling!r}; use one of "
                     f"{SAMPLING}.")
  key_a, key_b = jax.random.split(key)
  return pick(emb_a_NxD, key_a), pick(emb_b_NxD, key_b), has_negative_N


def margin_loss(s1_NxD: jax.Array, s2_NxD: jax.Array, t1_NxD: jax.Array,
                t2_NxD: jax.Array, weight_N: jax.Array, margin: float = 0.4
                ) -> jax.Array:
  """Weighted mean over pairs; padding pairs carry weight 0."""
  positive_N = vectors.cosine(s1_NxD, s2_NxD)
  loss_N = (jax.nn.relu(margin - positive_N + vectors.cosine(s1_NxD, t1_NxD))
            + jax.nn.relu(margin - positive_N + vectors.cosine(s2_NxD, t2_NxD)))
  return jnp.sum(loss_N * weight_N) / jnp.maximum(jnp.sum(weight_N), 1.0)


def token_cross_entropy(logits_BxTxV: jax.Array, targets_BxT: jax.Array,
                        mask_BxT: jax.Array, label_smoothing: float = 0.0
                        ) -> tuple[jax.Array, jax.Array]:
  """Summed (label-smoothed) cross-entropy over real tokens, and their count.

  The sum and the count are returned apart so that a mean over devices or
  micro-batches weighs every token alike.
  """
  # From the log-partition rather than a [B, T, V] log-softmax: the same
  # values, with one pass less over the vocabulary forward and backward
  # (a fifth of an NMT train step).
  logits = logits_BxTxV.astype(jnp.float32)
  log_z_BxT = jax.nn.logsumexp(logits, axis=-1)
  nll_BxT = log_z_BxT - jnp.take_along_axis(
      logits, targets_BxT[..., None], -1)[..., 0]
  if label_smoothing:
    uniform_BxT = log_z_BxT - jnp.mean(logits, axis=-1)
    nll_BxT = (1 - label_smoothing) * nll_BxT + label_smoothing * uniform_BxT
  mask = mask_BxT.astype(jnp.float32)
  return jnp.sum(nll_BxT * mask), jnp.sum(mask)
