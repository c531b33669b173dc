"""Similarities between bilingual sentence embeddings (Kim et al. 2019).

  cosine     cos(x, y).
  euclidean  -||x - y|| on the raw (unnormalised) vectors. On normalised
             vectors it would be -sqrt(2 - 2 cos(x, y)), a monotone function
             of cosine that ranks every pair alike, so it would add nothing;
             the raw vectors let the norms count, as in the paper, where
             Euclidean and cosine results differ.
  csls       2 cos(x, y) - r_y(x) - r_x(y) (Conneau et al. 2018): r_y(x) is
             the mean cosine of x to its k nearest rows of y, r_x(y) that of
             y to its k nearest rows of x, both over the whole sets passed in
             (exact k-NN by `paraflax.mining.knn`).
  mlp        a classifier on [x; y] (2 hidden ReLU layers of 512, sigmoid
             output) trained on parallel positives against negatives: the
             x%-worst cosine-scored pairs of a noisy corpus, or random pairs.
             The score is the logit: sigmoid(score) is the probability of
             "parallel", which ranks alike but saturates to exactly 1.0 in
             float32 and would turn confident pairs into ties. The input
             order [source; target] matters: mlp(x, y) != mlp(y, x).

x is always the source side (the non-English sentences) and y the target
side (English). `score` scores aligned rows (pair i = x_i, y_i), split over
the devices of a `data` mesh; `nearest` retrieves for every row its best
match on the other side, computing the [Nx, Ny] score matrix one block of
source rows at a time.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh

from paraflax import errors
from paraflax import vectors
from paraflax.mining import knn
from paraflax.models import heads
from paraflax.training import partitioning

Features = tuple[jax.Array, ...]  # per-row arrays, rows on the first axis


class Prepared(NamedTuple):
  """Per-row features of both sides and how to score them. Prepared over a
  mesh, each side has zero rows appended up to a multiple of its size."""
  src: Features
  tgt: Features
  pairs: Callable[[Features, Features], jax.Array]  # row i with row i: [N]
  grid: Callable[[Features, Features], jax.Array]  # all with all: [Bx, Ny]


def _rows(a: np.ndarray, mesh: Mesh | None) -> jax.Array:
  """Host rows on the devices: whole on the default device (mesh None), or
  split over `data`, padded with zero rows to divide evenly."""
  if mesh is None:
    return jnp.asarray(a)
  missing = -len(a) % mesh.size
  if missing:
    a = np.concatenate([a, np.zeros((missing,) + a.shape[1:], a.dtype)])
  return jax.device_put(a, partitioning.batch_sharding(mesh, 0))


def _dot_grid(a_BxD: jax.Array, b_NxD: jax.Array) -> jax.Array:
  # HIGHEST: no TF32 / bf16 passes on accelerators, so that near ties are
  # ordered as in float32 arithmetic.
  return jnp.einsum("bd,nd->bn", a_BxD, b_NxD,
                    precision=lax.Precision.HIGHEST)


# --- cosine -----------------------------------------------------------------


def _cosine_pairs(src: Features, tgt: Features) -> jax.Array:
  return jnp.sum(src[0] * tgt[0], axis=-1)


def _cosine_grid(src: Features, tgt: Features) -> jax.Array:
  return _dot_grid(src[0], tgt[0])


def _cosine(x: np.ndarray, y: np.ndarray, mesh: Mesh | None) -> Prepared:
  return Prepared((vectors.normalize(_rows(x, mesh)),),
                  (vectors.normalize(_rows(y, mesh)),),
                  _cosine_pairs, _cosine_grid)


# --- euclidean --------------------------------------------------------------


def _euclidean_pairs(src: Features, tgt: Features) -> jax.Array:
  return -jnp.sqrt(jnp.sum(jnp.square(src[0] - tgt[0]), axis=-1))


def _euclidean_grid(src: Features, tgt: Features) -> jax.Array:
  # ||x - y||^2 = |x|^2 + |y|^2 - 2 x.y; rounding can make it slightly
  # negative for near-identical rows.
  sq_BxN = src[1][:, None] + tgt[1][None, :] - 2 * _dot_grid(src[0], tgt[0])
  return -jnp.sqrt(jnp.maximum(sq_BxN, 0.0))


def _euclidean(x: np.ndarray, y: np.ndarray, mesh: Mesh | None
               ) -> Prepared:
  x, y = _rows(x, mesh), _rows(y, mesh)
  return Prepared((x, jnp.sum(jnp.square(x), axis=-1)),
                  (y, jnp.sum(jnp.square(y), axis=-1)),
                  _euclidean_pairs, _euclidean_grid)


# --- CSLS -------------------------------------------------------------------


def _csls_pairs(src: Features, tgt: Features) -> jax.Array:
  return 2 * jnp.sum(src[0] * tgt[0], axis=-1) - src[1] - tgt[1]


def _csls_grid(src: Features, tgt: Features) -> jax.Array:
  return (2 * _dot_grid(src[0], tgt[0]) - src[1][:, None]
          - tgt[1][None, :])


def _csls(x: np.ndarray, y: np.ndarray, mesh: Mesh | None, *, k: int = 10
          ) -> Prepared:
  # The neighbourhoods come from the real rows only: padding rows are added
  # after the search.
  (sims_x, _), (sims_y, _) = knn.both_ways(
      x, y, k, mesh=mesh, names=("source embeddings", "target embeddings"))
  r_x, r_y = knn.neighbourhood_means(sims_x, sims_y)
  return Prepared((vectors.normalize(_rows(x, mesh)), _rows(r_x, mesh)),
                  (vectors.normalize(_rows(y, mesh)), _rows(r_y, mesh)),
                  _csls_pairs, _csls_grid)


# --- MLP --------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class MLPSimilarity:
  """A trained MLP head and the embedding dimension it takes per side."""
  head: heads.MLPHead
  params: Any
  dim: int


@functools.partial(jax.jit, static_argnums=(0, 1))
def _mlp_project(head: heads.MLPHead, method: str, params, x_NxD) -> jax.Array:
  return head.apply(params, x_NxD, method=method)


@functools.partial(jax.jit, static_argnums=0)
def _mlp_tail(head: heads.MLPHead, params, h) -> jax.Array:
  return head.apply(params, h, method="tail")


def _mlp_pairs(model: MLPSimilarity, src: Features, tgt: Features
               ) -> jax.Array:
  return _mlp_tail(model.head, model.params, src[0] + tgt[0])


def _mlp_grid(model: MLPSimilarity, src: Features, tgt: Features
              ) -> jax.Array:
  return _mlp_tail(model.head, model.params,
                   src[0][:, None, :] + tgt[0][None, :, :])


def _mlp(x: np.ndarray, y: np.ndarray, mesh: Mesh | None, *,
         model: MLPSimilarity) -> Prepared:
  if x.shape[1] != model.dim:
    raise errors.DataError(
        f"the MLP similarity was trained on {model.dim}-dimensional "
        f"embeddings but these have {x.shape[1]}; use the encoder it was "
        "trained with, or retrain it.")
  return Prepared(
      (_mlp_project(model.head, "project_src", model.params,
                    _rows(x, mesh)),),
      (_mlp_project(model.head, "project_tgt", model.params,
                    _rows(y, mesh)),),
      functools.partial(_mlp_pairs, model),
      functools.partial(_mlp_grid, model))


SIMILARITIES: dict[str, Callable[..., Prepared]] = {
    "cosine": _cosine,
    "euclidean": _euclidean,
    "csls": _csls,
    "mlp": _mlp,
}


# --- Scoring ----------------------------------------------------------------


def prepare(name: str, x, y, *, mesh: Mesh | None = None, **ctx
            ) -> Prepared:
  """Features of source rows `x` [Nx, d] and target rows `y` [Ny, d].

  `ctx` holds what the similarity needs: `k` for csls (default 10), `model`
  (an `MLPSimilarity`) for mlp. With a `mesh`, the rows are split over its
  devices and padded (see `Prepared`); without, they stay whole on the
  default device, as `grid_blocks` needs.
  """
  if name not in SIMILARITIES:
    raise errors.ConfigError(f"unknown similarity {name!r}; use one of "
                             f"{sorted(SIMILARITIES)}.")
  x = knn.as_embeddings(x, "source embeddings")
  y = knn.as_embeddings(y, "target embeddings")
  if x.shape[1] != y.shape[1]:
    raise errors.DataError(
        f"source embeddings have dimension {x.shape[1]} but target "
        f"embeddings {y.shape[1]}; embed both with the same encoder.")
  return SIMILARITIES[name](np.asarray(x, np.float32),
                            np.asarray(y, np.float32), mesh, **ctx)


def score(name: str, x, y, *, mesh: Mesh | None = None, **ctx
          ) -> np.ndarray:
  """[N] float32 similarity of each aligned pair (x_i, y_i); the pairs are
  split over the devices of `mesh` (default: every device)."""
  if len(x) != len(y):
    raise errors.DataError(
        f"{len(x)} source but {len(y)} target embeddings; pairs need one "
        "of each per row.")
  mesh = partitioning.make_mesh(-1) if mesh is None else mesh
  p = prepare(name, x, y, mesh=mesh, **ctx)
  return np.asarray(p.pairs(p.src, p.tgt), np.float32)[:len(x)]


def grid_blocks(p: Prepared, *, block_pairs: int = 1 << 18
                ) -> Iterator[tuple[int, np.ndarray]]:
  """(start, [B, Ny] scores of source rows start..start+B with every target
  row); a block holds at most max(block_pairs, Ny) scores."""
  n_src, n_tgt = len(p.src[0]), len(p.tgt[0])
  rows = max(1, block_pairs // max(n_tgt, 1))
  for start in range(0, n_src, rows):
    block = jax.tree.map(lambda a: a[start:start + rows], p.src)
    yield start, np.asarray(p.grid(block, p.tgt), np.float32)


def nearest(name: str, x, y, *, block_pairs: int = 1 << 18, **ctx
            ) -> tuple[np.ndarray, np.ndarray]:
  """For each x_i the index of its best y, and for each y_j its best x.

  Both directions come from one pass over the score matrix, one block of
  source rows at a time; the scores are always sim(x, y), so an asymmetric
  similarity (mlp) keeps its [source; target] order. Equal scores go to the
  lower index. A block holds about `block_pairs` scores (the MLP also two
  [block_pairs, hidden] float32 activations, 1 GiB at the defaults).
  """
  p = prepare(name, x, y, **ctx)
  src2tgt = np.zeros(len(p.src[0]), np.int64)
  best_src = np.zeros(len(p.tgt[0]), np.int64)
  best_score = np.full(len(p.tgt[0]), -np.inf, np.float32)
  for start, block_BxN in grid_blocks(p, block_pairs=block_pairs):
    src2tgt[start:start + len(block_BxN)] = np.argmax(block_BxN, axis=1)
    rows_N = np.argmax(block_BxN, axis=0)
    top_N = block_BxN[rows_N, np.arange(block_BxN.shape[1])]
    # Strictly greater: an earlier block (lower index) keeps a tie.
    better = top_N > best_score
    best_src[better] = start + rows_N[better]
    best_score[better] = top_N[better]
  return src2tgt, best_src
