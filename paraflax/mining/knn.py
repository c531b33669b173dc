"""Exact k nearest neighbours by cosine similarity, blocked and sharded.

The corpus is split over the `data` axis of a mesh. For one block of queries,
each device scans its corpus shard in blocks, keeping a running top-k, then the
devices' top-k are all-gathered and merged. No [queries, corpus] matrix exists
beyond one [query block, corpus block] tile per device.

Ties go to the lower corpus index: `lax.top_k` prefers the earlier position,
and every merge puts lower corpus indices first (the running top-k before the
next block, device 0 before device 1), so results do not depend on the number
of devices or the block size.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P

from paraflax import errors
from paraflax import vectors
from paraflax.training import partitioning

# Narrow floats stay narrow on the device (half the memory); everything else
# becomes float32. Similarities are always computed in float32.
_KEPT_DTYPES = (np.dtype(np.float16), np.dtype(jnp.bfloat16),
                np.dtype(np.float32))
_SHOWN = 5  # how many offending rows an error message lists


def as_embeddings(x, name: str) -> np.ndarray:
  """`x` as a host [rows, dim] float array with finite rows, or DataError."""
  x = np.asarray(x)
  if x.ndim != 2:
    raise errors.DataError(f"{name} must be a 2-D [rows, dim] array of "
                           f"embeddings; got shape {x.shape}.")
  if x.dtype not in _KEPT_DTYPES:
    x = x.astype(np.float32)
  # A float64 row sum is non-finite exactly when the row has a NaN or inf
  # (finite values cannot overflow it) and needs no [rows, dim] temporary.
  bad = np.flatnonzero(~np.isfinite(x.sum(axis=1, dtype=np.float64)))
  if bad.size:
    shown = ", ".join(str(i) for i in bad[:_SHOWN])
    more = f" (and {bad.size - _SHOWN} more)" if bad.size > _SHOWN else ""
    raise errors.DataError(
        f"{name} row(s) {shown}{more} (0-based) contain NaN or inf; fix or "
        f"drop those embeddings before the nearest-neighbour search.")
  return x


def check_inputs(queries, corpus, k: int, block: int, names: tuple[str, str]
                 ) -> tuple[np.ndarray, np.ndarray]:
  """Both inputs as `as_embeddings`, of one dimension, and k and block in
  range, or the error that says what to fix."""
  queries = as_embeddings(queries, names[0])
  corpus = as_embeddings(corpus, names[1])
  if queries.shape[1] != corpus.shape[1]:
    raise errors.DataError(
        f"{names[0]} have dimension {queries.shape[1]} but {names[1]} have "
        f"{corpus.shape[1]}; embed both with the same encoder.")
  if not 1 <= k <= len(corpus):
    raise errors.ConfigError(
        f"k={k} nearest neighbours asked for, but the {names[1]} has "
        f"{len(corpus)} rows; use 1 <= k <= {len(corpus)}.")
  if block < 1:
    raise errors.ConfigError(f"block={block}; use a positive block size.")
  return queries, corpus


def _shard_top_k(q_QxD: jax.Array, c_CxD: jax.Array, n_valid: jax.Array, *,
                 k: int, block: int) -> tuple[jax.Array, jax.Array]:
  """Top-k of one query block over this device's corpus shard."""
  num_blocks = c_CxD.shape[0] // block
  blocks_BxCxD = c_CxD.reshape(num_blocks, block, c_CxD.shape[1])
  q_QxD = vectors.normalize(q_QxD.astype(jnp.float32))
  shard_start = lax.axis_index(partitioning.DATA) * num_blocks * block

  def step(carry, xs):
    top_QxK, idx_QxK = carry
    c_block_CxD, b = xs
    sims_QxC = jnp.einsum("qd,cd->qc", q_QxD,
                          vectors.normalize(c_block_CxD.astype(jnp.float32)),
                          precision=lax.Precision.HIGHEST)
    idx_C = shard_start + b * block + jnp.arange(block, dtype=jnp.int32)
    # Padding rows can never be chosen: every real similarity is finite.
    sims_QxC = jnp.where(idx_C < n_valid, sims_QxC, -jnp.inf)
    block_top, block_pos = lax.top_k(sims_QxC, min(k, block))
    # The running top-k comes first: its indices are lower, so it wins ties.
    merged_top = jnp.concatenate([top_QxK, block_top], axis=1)
    merged_idx = jnp.concatenate([idx_QxK, idx_C[block_pos]], axis=1)
    top_QxK, pos_QxK = lax.top_k(merged_top, k)
    return (top_QxK, jnp.take_along_axis(merged_idx, pos_QxK, axis=1)), None

  num_queries = q_QxD.shape[0]
  # The carry differs per device from the first step on.
  init = lax.pcast((jnp.full((num_queries, k), -jnp.inf, jnp.float32),
                    jnp.zeros((num_queries, k), jnp.int32)),
                   partitioning.DATA, to="varying")
  (top_QxK, idx_QxK), _ = lax.scan(
      step, init, (blocks_BxCxD, jnp.arange(num_blocks, dtype=jnp.int32)))
  return top_QxK[None], idx_QxK[None]


@functools.lru_cache(maxsize=16)
def _searcher(mesh: Mesh, k: int, block: int):
  """One jitted search per (mesh, k, corpus block); jit caches the shapes."""
  per_shard = jax.shard_map(
      functools.partial(_shard_top_k, k=k, block=block), mesh=mesh,
      in_specs=(P(), P(partitioning.DATA), P()),
      out_specs=(P(partitioning.DATA), P(partitioning.DATA)))

  def search(q_QxD, c_CxD, n_valid):
    # [devices, Q, k] -> [Q, devices * k]: the merge all-gathers k candidates
    # per device. Device order is corpus order, so lower indices stay first
    # on equal similarity.
    top_SxQxK, idx_SxQxK = per_shard(q_QxD, c_CxD, n_valid)
    top_QxSK, idx_QxSK = (jnp.moveaxis(a, 0, 1).reshape(a.shape[1], -1)
                          for a in (top_SxQxK, idx_SxQxK))
    top_QxK, pos_QxK = lax.top_k(top_QxSK, k)
    return top_QxK, jnp.take_along_axis(idx_QxSK, pos_QxK, axis=1)

  return jax.jit(search, out_shardings=partitioning.replicated(mesh))


def _ceil_div(a: int, b: int) -> int:
  return -(-a // b)


def num_blocks(rows: int, block: int) -> int:
  """Query blocks of `rows` queries: block b holds rows [b * block,
  (b + 1) * block), in `knn_blocks` and every other backend."""
  return _ceil_div(rows, block)


def _balanced_block(rows: int, block: int) -> int:
  """The smallest block size that covers `rows` in as few blocks as `block`
  does: the corpus padding stays below one row per block and device instead
  of up to a block per device."""
  return _ceil_div(rows, _ceil_div(rows, block))


def _put_corpus(corpus: np.ndarray, padded_rows: int, mesh: Mesh
                ) -> jax.Array:
  """The corpus split over `data`, zero rows appended to `padded_rows`,
  without a padded copy of the whole corpus on the host."""

  def shard(index: tuple[slice, ...]) -> np.ndarray:
    rows = index[0]
    start, stop = rows.start or 0, rows.stop or padded_rows
    part = corpus[start:min(stop, len(corpus))]
    missing = stop - start - len(part)
    if missing > 0:
      part = np.concatenate(
          [part, np.zeros((missing, corpus.shape[1]), corpus.dtype)])
    return part

  return jax.make_array_from_callback(
      (padded_rows, corpus.shape[1]), partitioning.batch_sharding(mesh, 0),
      shard)


def knn_blocks(queries: np.ndarray | jax.Array,
               corpus: np.ndarray | jax.Array, k: int, *, block: int = 8192,
               mesh: Mesh | None = None,
               names: tuple[str, str] = ("queries", "corpus"),
               skip: Collection[int] = ()
               ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
  """`knn` one query block at a time, for progress and resumable runs.

  Yields (b, similarities, indices) for query rows [b * block, (b + 1) *
  block) in increasing b, leaving out the blocks in `skip` (those a caller
  already has). Results equal those of `knn`. Inputs are checked before the
  first block is searched; arguments as in `knn`.
  """
  queries, corpus = check_inputs(queries, corpus, k, block, names)
  todo = [b for b in range(num_blocks(len(queries), block)) if b not in skip]
  if not todo:
    return iter(())
  mesh = partitioning.make_mesh(-1) if mesh is None else mesh
  shard_rows = _ceil_div(len(corpus), mesh.size)
  corpus_block = _balanced_block(shard_rows, block)
  corpus_dev = _put_corpus(
      corpus, mesh.size * _ceil_div(shard_rows, corpus_block) * corpus_block,
      mesh)
  searcher = _searcher(mesh, k, corpus_block)
  n_valid = np.int32(len(corpus))
  replicated = partitioning.replicated(mesh)
  return _search_blocks(
      lambda q: searcher(jax.device_put(q, replicated), corpus_dev, n_valid),
      queries, block, todo)


def _search_blocks(search: Callable[[np.ndarray], Any], queries: np.ndarray,
                   block: int, todo: list[int]
                   ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
  # Queries keep the full block (when there are that many) so that calls
  # with different query counts share one compiled search.
  query_block = min(block, len(queries))

  def dispatch(b: int) -> tuple[int, int, Any]:
    q = queries[b * block:(b + 1) * block]
    rows = len(q)
    if rows < query_block:
      q = np.concatenate(
          [q, np.zeros((query_block - rows, q.shape[1]), q.dtype)])
    return b, rows, search(q)

  def fetch(dispatched) -> tuple[int, np.ndarray, np.ndarray]:
    b, rows, result = dispatched
    sims, idx = jax.device_get(result)
    return b, sims[:rows], idx[:rows]

  # The next block is dispatched before this one is fetched, so the device
  # keeps working while the caller handles a result.
  pending = dispatch(todo[0])
  for b in todo[1:]:
    done, pending = pending, dispatch(b)
    yield fetch(done)
  yield fetch(pending)


def knn(queries: np.ndarray | jax.Array, corpus: np.ndarray | jax.Array,
        k: int, *, block: int = 8192, mesh: Mesh | None = None,
        names: tuple[str, str] = ("queries", "corpus")
        ) -> tuple[np.ndarray, np.ndarray]:
  """The `k` corpus rows most cosine-similar to each query row.

  Args:
    queries: [Nq, d] embeddings (float32, float16 or bfloat16; not normalised).
    corpus: [Nc, d] embeddings.
    k: neighbours per query, 1 <= k <= Nc.
    block: rows per query block and per corpus block on each device; device
      memory holds one [block, block] float32 tile at a time besides the
      corpus shard.
    mesh: the corpus is split over its `data` axis (default: all devices).
    names: what to call the two inputs in error messages.

  Returns:
    similarities [Nq, k] float32, sorted descending, and indices [Nq, k] int32
    into the corpus; equal similarities are ordered by lower index.
  """
  parts = [(sims, idx) for _, sims, idx in knn_blocks(
      queries, corpus, k, block=block, mesh=mesh, names=names)]
  if not parts:
    return np.zeros((0, k), np.float32), np.zeros((0, k), np.int32)
  sims, idx = (np.concatenate(p) for p in zip(*parts))
  return sims, idx


Neighbours = tuple[np.ndarray, np.ndarray]  # `knn`'s similarities, indices


def both_ways(x: np.ndarray | jax.Array, y: np.ndarray | jax.Array, k: int,
              *, block: int = 8192, mesh: Mesh | None = None,
              names: tuple[str, str] = ("x", "y")
              ) -> tuple[Neighbours, Neighbours]:
  """`knn` of x in y, then of y in x; `names` name x and y."""
  return (knn(x, y, k, block=block, mesh=mesh, names=names),
          knn(y, x, k, block=block, mesh=mesh, names=names[::-1]))


def neighbourhood_means(fwd_sims_NxK: np.ndarray, bwd_sims_MxK: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
  """The mean similarity of each x to its k nearest y, and of each y to its
  k nearest x (CSLS's r terms, the margin's neighbourhood), from the
  similarities of `both_ways`, in their dtype."""
  return fwd_sims_NxK.mean(axis=1), bwd_sims_MxK.mean(axis=1)
