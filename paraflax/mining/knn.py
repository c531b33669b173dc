"""Exact k nearest neighbours by cosine similarity, blocked and sharded.

The corpus is split over the `data` axis of a mesh. For one block of queries,
each device scans its corpus shard in blocks, keeping a running top-k, then the
devices' top-k are all-gathered and merged. No [queries, corpus] matrix exists
beyond one [query block, corpus block] tile per device.

Ties go to the lower corpus index: `lax.top_k` prefers the earlier position,
and every merge puts lower corpus indices first (the running top-k before the
next block, device 0 before device 1), so results do not depend on the number
of devices or the block size.

`both_ways` searches x in y and y in x from one product: each tile also gives
the corpus rows' top-k over the query block, merged on the host across query
blocks (`both_ways_blocks`, `merge_columns`).
"""
from __future__ import annotations

import functools
import os
from collections.abc import Collection, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P

from paraflax import errors
from paraflax import vectors
from paraflax.mining import native
from paraflax.training import distributed
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


# Top-k of a tile through groups of _GROUP: the k largest elements lie in
# the k groups of largest maximum (ties to the lower group), so only k *
# _GROUP candidates are ranked. Same values, indices and tie order as
# `lax.top_k` over the whole tile, measured 3x (rows) and 3.7x (columns,
# which `lax.top_k` reaches only through a transpose) faster on XLA:CPU for
# a 4096 x 4096 tile.
#
# Padding (corpus rows past the end, query rows past the last real one) is a
# suffix of each tile side, so only the one group holding the boundary needs
# a mask. Masking the whole tile instead made XLA:CPU write a masked copy of
# it for each direction: 3 tiles (717 MB at [8192, 7168]) per device instead
# of 1.
_GROUP = 64
# Columns take groups of 32 rows: their candidates are a strided gather (one
# cache line per element), which halves, while the group top-k widens from
# 128 to 256. column_top_k of an [8192, 7168] tile: 36 against 42.7 ms of CPU
# (XLA:CPU, 2 shared cores). Rows gather contiguous runs and keep 64.
_COLUMN_GROUP = 32


# On XLA:CPU `lax.top_k` runs each row on one thread; for a few k, k passes
# of (maximum, first position holding it) are elementwise reductions that
# use every core: the top 4 of [8192, 256] in 2.1 against 5.4 ms, of
# [8192, 112] in 1.0 against 3.6 (2 idle AMD EPYC cores). Where devices
# outnumber cores (simulated ones), each `lax.top_k` already has a core and
# the passes are only more work. Other platforms keep `lax.top_k`,
# unmeasured there.
_PASSES_UP_TO = 8


def _top_k_by_passes(x_AxW: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
  """`lax.top_k` of each row (ties to the lower position, -inf included)
  by k passes."""
  width = x_AxW.shape[1]
  pos_W = jnp.arange(width, dtype=jnp.int32)
  taken_AxW = jnp.zeros(x_AxW.shape, bool)
  tops, positions = [], []
  for _ in range(k):
    left_AxW = jnp.where(taken_AxW, -jnp.inf, x_AxW)
    top_A = left_AxW.max(axis=1)
    at_A = jnp.where((left_AxW == top_A[:, None]) & ~taken_AxW, pos_W,
                     width).min(axis=1)
    taken_AxW = taken_AxW | (pos_W == at_A[:, None])
    tops.append(top_A)
    positions.append(at_A)
  return jnp.stack(tops, axis=1), jnp.stack(positions, axis=1)


def _cores_and_cpu_devices() -> tuple[int, int]:
  """This process's cores and its CPU devices (0 without a CPU backend)."""
  try:
    devices = len(jax.local_devices(backend="cpu"))
  except RuntimeError:  # JAX_PLATFORMS without cpu: nothing lowers for it
    devices = 0
  cores = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
           else os.cpu_count() or 1)  # macOS has no affinity
  return cores, devices


def _passes_pay() -> bool:
  """Whether each CPU device has more than one core to itself."""
  cores, devices = _cores_and_cpu_devices()
  return 0 < devices < cores


def _top_k(x_AxW: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
  """`lax.top_k(x_AxW, k)`, by passes on the CPU where k is small and
  `_passes_pay`."""
  by_top_k = lambda x_AxW: tuple(lax.top_k(x_AxW, k))
  if k > _PASSES_UP_TO or not _passes_pay():
    return by_top_k(x_AxW)
  return lax.platform_dependent(
      x_AxW, cpu=functools.partial(_top_k_by_passes, k=k), default=by_top_k)


def _group_max(s_AxGxM: jax.Array, n_ok: jax.Array) -> jax.Array:
  """[A, G] maxima over the last axis, counting only the first n_ok of the
  G * M positions of each row (the rest count as -inf; n_ok may be <= 0)."""
  groups, size = s_AxGxM.shape[1:]
  max_AxG = s_AxGxM.max(axis=2)
  # The group holding the boundary, masked; clamped to the last group when
  # every position is real, where it is then never used.
  edge = jnp.minimum(n_ok // size, groups - 1)
  edge_AxM = lax.dynamic_index_in_dim(s_AxGxM, edge, axis=1, keepdims=False)
  ok_M = edge * size + jnp.arange(size, dtype=jnp.int32) < n_ok
  edge_A = jnp.where(ok_M, edge_AxM, -jnp.inf).max(axis=1)
  group_G = jnp.arange(groups, dtype=jnp.int32)
  return jnp.where(group_G * size + size <= n_ok, max_AxG,
                   jnp.where(group_G == edge, edge_A[:, None], -jnp.inf))


def _top_candidates(group_AxK: jax.Array, cand_AxKxM: jax.Array,
                    n_ok: jax.Array) -> tuple[jax.Array, jax.Array]:
  """The top k of the candidates (whole groups `group_AxK`, in increasing
  group order, so that `lax.top_k` still prefers the lower position) and
  their positions; positions from n_ok on count as -inf."""
  rows, k, size = cand_AxKxM.shape
  pos_AxKxM = group_AxK[:, :, None] * size + jnp.arange(size, dtype=jnp.int32)
  cand_AxKxM = jnp.where(pos_AxKxM < n_ok, cand_AxKxM, -jnp.inf)
  top_AxK, at_AxK = _top_k(cand_AxKxM.reshape(rows, k * size), k)
  return top_AxK, jnp.take_along_axis(pos_AxKxM.reshape(rows, k * size),
                                      at_AxK, axis=1)


def row_top_k(s_QxC: jax.Array, n_ok: jax.Array, k: int
              ) -> tuple[jax.Array, jax.Array]:
  """`lax.top_k` of each row of s_QxC over its first n_ok columns (the
  others count as -inf), faster when C is a multiple of _GROUP."""
  rows, cols = s_QxC.shape
  if cols % _GROUP or cols // _GROUP < k:
    ok_C = jnp.arange(cols, dtype=jnp.int32) < n_ok
    return lax.top_k(jnp.where(ok_C, s_QxC, -jnp.inf), k)
  s_QxGxM = s_QxC.reshape(rows, cols // _GROUP, _GROUP)
  _, group_QxK = _top_k(_group_max(s_QxGxM, n_ok), k)
  group_QxK = jnp.sort(group_QxK, axis=1)
  # Whole groups, each a contiguous slice of its row.
  return _top_candidates(
      group_QxK, s_QxGxM[jnp.arange(rows)[:, None], group_QxK], n_ok)


def column_top_k(s_QxC: jax.Array, n_ok: jax.Array, k: int
                 ) -> tuple[jax.Array, jax.Array]:
  """`lax.top_k` of each column of s_QxC over its first n_ok rows, without
  transposing the whole tile."""
  rows, cols = s_QxC.shape
  if rows % _COLUMN_GROUP or rows // _COLUMN_GROUP < k:
    ok_Q = jnp.arange(rows, dtype=jnp.int32) < n_ok
    return lax.top_k(jnp.where(ok_Q[:, None], s_QxC, -jnp.inf).T, k)
  s_GxMxC = s_QxC.reshape(rows // _COLUMN_GROUP, _COLUMN_GROUP, cols)
  # [C, G, M] is a view for the group maxima: the reduction runs over M.
  max_CxG = _group_max(jnp.moveaxis(s_GxMxC, 2, 0), n_ok)
  _, group_CxK = _top_k(max_CxG, k)
  group_CxK = jnp.sort(group_CxK, axis=1)
  return _top_candidates(
      group_CxK, s_GxMxC[group_CxK, :, jnp.arange(cols)[:, None]], n_ok)


def _approx_tile_top_k(s_QxC: jax.Array, n_ok: jax.Array,
                       q_ok: jax.Array | None, row_k: int, col_k: int,
                       recall_target: float
                       ) -> tuple[tuple[jax.Array, jax.Array],
                                  tuple[jax.Array, jax.Array] | None]:
  """`_tile_top_k` by `lax.approx_max_k` at `recall_target`: on TPU the
  tile's top-k at the product's speed (TPU-KNN), elsewhere XLA's exact
  fallback. Rows and columns past the real ones count as -inf."""
  rows, cols = s_QxC.shape
  ok_C = jnp.arange(cols, dtype=jnp.int32) < n_ok
  top = tuple(lax.approx_max_k(jnp.where(ok_C, s_QxC, -jnp.inf), row_k,
                               recall_target=recall_target))
  if q_ok is None:
    return top, None
  ok_Q = jnp.arange(rows, dtype=jnp.int32) < q_ok
  col_KxC, pos_KxC = lax.approx_max_k(
      jnp.where(ok_Q[:, None], s_QxC, -jnp.inf), col_k,
      reduction_dimension=0, recall_target=recall_target)
  return top, (col_KxC.T, pos_KxC.T)


def _tile_top_k(s_QxC: jax.Array, n_ok: jax.Array, q_ok: jax.Array | None,
                floor_Q: jax.Array, row_k: int, col_k: int,
                recall_target: float | None = None
                ) -> tuple[tuple[jax.Array, jax.Array],
                           tuple[jax.Array, jax.Array] | None]:
  """`row_top_k(s_QxC, n_ok, row_k)` and, with q_ok, `column_top_k(s_QxC,
  q_ok, col_k)`; on the CPU by `native.both_top_k` where it is built, whose
  rows leave out (as -inf) what is not above floor_Q, the running k-th
  similarity that such an element could not pass anyway. With
  `recall_target`, `_approx_tile_top_k` on every platform."""
  if recall_target is not None:
    return _approx_tile_top_k(s_QxC, n_ok, q_ok, row_k, col_k, recall_target)

  def by_ops(s_QxC):
    rows = tuple(row_top_k(s_QxC, n_ok, row_k))
    return rows, (None if q_ok is None
                  else tuple(column_top_k(s_QxC, q_ok, col_k)))

  # Not built where jax runs on an accelerator: nothing would call it.
  if jax.default_backend() != "cpu" or not native.available():
    return by_ops(s_QxC)

  def by_kernel(s_QxC):
    cores, devices = _cores_and_cpu_devices()
    top, pos, col_top, col_pos = native.both_top_k(
        s_QxC, n_ok, 0 if q_ok is None else q_ok, floor_Q, row_k,
        1 if q_ok is None else col_k, workers=max(1, cores // devices))
    return (top, pos), None if q_ok is None else (col_top, col_pos)

  return lax.platform_dependent(s_QxC, cpu=by_kernel, default=by_ops)


def _tile_rows(rows: int, k: int) -> int:
  """`rows` rounded up to a multiple of _GROUP where grouping pays."""
  return _ceil_div(rows, _GROUP) * _GROUP if rows >= _GROUP * k else rows


def _last_block_rows(rows: int, query_block: int, k: int) -> int:
  """The query rows a block of `rows` is padded to when both directions
  come from its tiles: the smallest query_block / 2^j (as `_tile_rows`)
  that holds it. A short last block (848 rows at 50k and block 8192) costs
  about its own rows, not 12 % more product for the whole run, and the
  compiled shapes stay few (at most log2(query_block) + 1)."""
  size = query_block
  while size // 2 >= rows:
    size //= 2
  return _tile_rows(size, k)


def _shard_top_k(q_QxD: jax.Array, c_CxD: jax.Array, n_valid: jax.Array,
                 q_valid: jax.Array | None = None, *, k: int, block: int,
                 recall_target: float | None = None
                 ) -> tuple[jax.Array, ...]:
  """Top-k of one query block over this device's corpus shard; with
  `q_valid` (the real query rows) also the top-k of each of the shard's
  corpus rows over the query block (positions in the block), from the same
  tiles."""
  num_blocks = c_CxD.shape[0] // block
  blocks_BxCxD = c_CxD.reshape(num_blocks, block, c_CxD.shape[1])
  q_QxD = vectors.normalize(q_QxD.astype(jnp.float32))
  shard_start = lax.axis_index(partitioning.DATA) * num_blocks * block
  num_queries = q_QxD.shape[0]
  col_k = min(k, num_queries)

  def step(carry, xs):
    top_QxK, idx_QxK = carry
    c_block_CxD, b = xs
    sims_QxC = jnp.einsum("qd,cd->qc", q_QxD,
                          vectors.normalize(c_block_CxD.astype(jnp.float32)),
                          precision=lax.Precision.HIGHEST)
    idx_C = shard_start + b * block + jnp.arange(block, dtype=jnp.int32)
    # Padding rows can never be chosen: every real similarity is finite.
    (block_top, block_pos), columns = _tile_top_k(
        sims_QxC, n_valid - idx_C[0], q_valid, top_QxK[:, -1], min(k, block),
        col_k, recall_target)
    # The running top-k comes first: its indices are lower, so it wins ties.
    merged_top = jnp.concatenate([top_QxK, block_top], axis=1)
    merged_idx = jnp.concatenate([idx_QxK, idx_C[block_pos]], axis=1)
    top_QxK, pos_QxK = lax.top_k(merged_top, k)
    return (top_QxK, jnp.take_along_axis(merged_idx, pos_QxK, axis=1)), columns

  # The carry differs per device from the first step on.
  init = lax.pcast((jnp.full((num_queries, k), -jnp.inf, jnp.float32),
                    jnp.zeros((num_queries, k), jnp.int32)),
                   partitioning.DATA, to="varying")
  (top_QxK, idx_QxK), columns = lax.scan(
      step, init, (blocks_BxCxD, jnp.arange(num_blocks, dtype=jnp.int32)))
  rows = top_QxK[None], idx_QxK[None]
  if columns is None:
    return rows
  return rows + tuple(a.reshape(-1, col_k) for a in columns)


@functools.lru_cache(maxsize=16)
def _searcher(mesh: Mesh, k: int, block: int, columns: bool = False,
              recall_target: float | None = None):
  """One jitted search per (mesh, k, corpus block); jit caches the shapes.
  With `columns` it takes the real query rows too and also returns the
  corpus rows' top-k over the query block, split over `data`; with
  `recall_target`, approximate tile top-k (`_approx_tile_top_k`)."""
  per_shard = jax.shard_map(
      functools.partial(_shard_top_k, k=k, block=block,
                        recall_target=recall_target), mesh=mesh,
      in_specs=(P(), P(partitioning.DATA), P()) + ((P(),) if columns else ()),
      out_specs=(P(partitioning.DATA),) * (4 if columns else 2))

  def search(q_QxD, c_CxD, n_valid, *q_valid):
    # [devices, Q, k] -> [Q, devices * k]: the merge all-gathers k candidates
    # per device. Device order is corpus order, so lower indices stay first
    # on equal similarity.
    top_SxQxK, idx_SxQxK, *cols = per_shard(q_QxD, c_CxD, n_valid, *q_valid)
    top_QxSK, idx_QxSK = (jnp.moveaxis(a, 0, 1).reshape(a.shape[1], -1)
                          for a in (top_SxQxK, idx_SxQxK))
    top_QxK, pos_QxK = lax.top_k(top_QxSK, k)
    return (top_QxK, jnp.take_along_axis(idx_QxSK, pos_QxK, axis=1), *cols)

  replicated = partitioning.replicated(mesh)
  split = partitioning.batch_sharding(mesh, 0)
  return distributed.first_runs_together(jax.jit(search, out_shardings=(
      (replicated, replicated, split, split) if columns else replicated)),
                                         "knn")


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
  return _blocked_search(queries, corpus, k, block, mesh, skip,
                         columns=False)


def _blocked_search(queries: np.ndarray, corpus: np.ndarray, k: int,
                    block: int, mesh: Mesh | None, skip: Collection[int],
                    columns: bool, recall_target: float | None = None
                    ) -> Iterator[tuple]:
  """`knn_blocks`, or with `columns` `both_ways_blocks`, on checked inputs."""
  todo = [b for b in range(num_blocks(len(queries), block)) if b not in skip]
  if not todo:
    return
  mesh = partitioning.make_mesh(-1) if mesh is None else mesh
  shard_rows = _ceil_div(len(corpus), mesh.size)
  corpus_block = _tile_rows(_balanced_block(shard_rows, block), k)
  corpus_dev = _put_corpus(
      corpus, mesh.size * _ceil_div(shard_rows, corpus_block) * corpus_block,
      mesh)
  # lru_cache keys on the arguments as given: one-way calls leave `columns`
  # out, as everywhere else.
  if not columns:
    searcher = _searcher(mesh, k, corpus_block)
  elif recall_target is None:
    searcher = _searcher(mesh, k, corpus_block, columns=True)
  else:
    searcher = _searcher(mesh, k, corpus_block, columns=True,
                         recall_target=recall_target)
  n_valid = np.int32(len(corpus))
  replicated = partitioning.replicated(mesh)
  # Queries keep the full block (when there are that many) so that calls
  # with different query counts share one compiled search.
  query_block = min(block, len(queries))
  if columns:
    query_block = _tile_rows(query_block, k)

  def dispatch(b: int) -> tuple[int, int, Any]:
    q = queries[b * block:(b + 1) * block]
    rows = len(q)
    padded = (_last_block_rows(rows, query_block, k) if columns
              else query_block)
    if rows < padded:
      q = np.concatenate([q, np.zeros((padded - rows, q.shape[1]), q.dtype)])
    q_valid = (np.int32(rows),) if columns else ()
    return b, rows, searcher(partitioning.put_global(q, replicated),
                             corpus_dev, n_valid, *q_valid)

  def fetch(dispatched) -> tuple:
    b, rows, result = dispatched
    sims, idx, *cols = partitioning.fetch(result)
    if cols:  # positions in the block to query indices
      cols = cols[0][:len(corpus)], cols[1][:len(corpus)] + np.int32(b * block)
    return b, sims[:rows], idx[:rows], *cols

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

# --- Both ways from one product ---------------------------------------------
#
# Each [x block, y block] tile of cosines updates the x rows' top-k (as in
# `knn`) and gives the y columns' top-k over this x block; the host merges
# the column top-k of the x blocks in block order. The N x N x d product is
# computed once instead of twice.
#
# The product is XLA's on every platform, CPU included: a numpy path
# (np.matmul on float32 tiles, np.argpartition top-k) measured no faster
# here (2 shared cores, OpenBLAS 0.3.31, load 4-11): the 8192 x 8192 x 256
# tile product at 49-61 GFLOP/s (XLA) vs 55-61 (BLAS), 4096 x 4096 x 256 at
# 131 vs 95; and the top-k of a 4096 x 4096 tile took 11 ms (rows) + 18 ms
# (columns) grouped on XLA vs 32 + 162 ms with argpartition (columns through
# a transposed copy). On the CPU both top-k come from one read of the tile
# by our kernel (`native`) where it builds: 12 against 37 ms for an
# [8192, 7168] tile (2 idle AMD EPYC cores).

BothWaysBlock = tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def both_ways_blocks(x: np.ndarray | jax.Array, y: np.ndarray | jax.Array,
                     k: int, *, block: int = 8192, mesh: Mesh | None = None,
                     names: tuple[str, str] = ("x", "y"),
                     skip: Collection[int] = (),
                     recall_target: float | None = None
                     ) -> Iterator[BothWaysBlock]:
  """`knn` of x in y and of y in x, one x block at a time.

  Yields (b, sims, idx, col_sims, col_idx) for x rows [b * block, (b + 1) *
  block) in increasing b, leaving out the blocks in `skip`: sims and idx as
  `knn_blocks` of x in y; col_sims and col_idx [Ny, <= k] are each y row's
  top-k among these x rows (indices into x). `merge_columns` of every
  block's columns, in block order, equals `knn` of y in x. Arguments as in
  `knn`; `names` name x and y. With `recall_target` (in (0, 1]) each
  tile's top-k is `lax.approx_max_k`'s at that recall (TPU-KNN): the
  neighbours are approximate on TPU, exact on XLA's fallback.
  """
  x, y = check_inputs(x, y, k, block, names)
  check_inputs(y, x, k, block, names[::-1])
  return _blocked_search(x, y, k, block, mesh, skip, columns=True,
                         recall_target=recall_target)


def merge_columns(columns: Iterator[Neighbours], k: int) -> Neighbours:
  """The top-k of each row over the parts, given in increasing index order
  (ties go to the earlier part, as within a part to the lower index)."""
  top, idx = next(columns)
  for part_top, part_idx in columns:
    merged_top = np.concatenate([top, part_top], axis=1)
    merged_idx = np.concatenate([idx, part_idx], axis=1)
    pos = np.argsort(-merged_top, axis=1, kind="stable")[:, :k]
    top = np.take_along_axis(merged_top, pos, axis=1)
    idx = np.take_along_axis(merged_idx, pos, axis=1)
  return top, idx


def both_ways(x: np.ndarray | jax.Array, y: np.ndarray | jax.Array, k: int,
              *, block: int = 8192, mesh: Mesh | None = None,
              names: tuple[str, str] = ("x", "y")
              ) -> tuple[Neighbours, Neighbours]:
  """`knn` of x in y and of y in x, from one product (`both_ways_blocks`);
  `names` name x and y."""
  parts = list(both_ways_blocks(x, y, k, block=block, mesh=mesh, names=names))
  fwd = tuple(np.concatenate([p[i] for p in parts]) for i in (1, 2))
  return fwd, merge_columns(((p[3], p[4]) for p in parts), k)


def neighbourhood_means(fwd_sims_NxK: np.ndarray, bwd_sims_MxK: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
  """The mean similarity of each x to its k nearest y, and of each y to its
  k nearest x (CSLS's r terms, the margin's neighbourhood), from the
  similarities of `both_ways`, in their dtype."""
  return fwd_sims_NxK.mean(axis=1), bwd_sims_MxK.mean(axis=1)
