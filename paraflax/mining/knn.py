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
the corpus rows' top-k over the query block, merged on the device into a
running top-k across query blocks (`both_ways_blocks`).
"""
from __future__ import annotations

import functools
from collections.abc import Collection, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P

from paraflax import vectors
# as_embeddings: knn.as_embeddings too, as its callers name it.
from paraflax.mining.embedding_checks import as_embeddings  # pylint: disable=unused-import
from paraflax.mining.embedding_checks import check_inputs
from paraflax.mining import tile_top_k
from paraflax.training import distributed
from paraflax.training import partitioning


def _shard_top_k(q_QxD: jax.Array, c_CxD: jax.Array, n_valid: jax.Array,
                 q_valid: jax.Array | None = None,
                 books_MxKxS: jax.Array | None = None, *, k: int, block: int,
                 recall_target: float | None = None
                 ) -> tuple[jax.Array, ...]:
  """Top-k of one query block over this device's corpus shard; with
  `q_valid` (the real query rows) also the top-k of each of the shard's
  corpus rows over the query block (positions in the block), from the same
  tiles. With `books_MxKxS` the shard holds product-quantizer codes [rows,
  M], each corpus block decoded from them before its product."""
  num_blocks = c_CxD.shape[0] // block
  blocks_BxCxD = c_CxD.reshape(num_blocks, block, c_CxD.shape[1])
  q_QxD = vectors.normalize(q_QxD.astype(jnp.float32))
  shard_start = lax.axis_index(partitioning.DATA) * num_blocks * block
  num_queries = q_QxD.shape[0]
  col_k = min(k, num_queries)

  def step(carry, xs):
    top_QxK, idx_QxK = carry
    c_block_CxD, b = xs
    if books_MxKxS is not None:
      # The barrier keeps the decode in the loop: hoisted, it would
      # decode (or index) the whole shard at once.
      c_block_CxD = pq_decode(lax.optimization_barrier(c_block_CxD),
                              books_MxKxS)
    sims_QxC = jnp.einsum("qd,cd->qc", q_QxD,
                          vectors.normalize(c_block_CxD.astype(jnp.float32)),
                          precision=lax.Precision.HIGHEST)
    idx_C = shard_start + b * block + jnp.arange(block, dtype=jnp.int32)
    # Padding rows can never be chosen: every real similarity is finite.
    (block_top, block_pos), columns = tile_top_k.tile_top_k(
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


def pq_decode(codes_CxM: jax.Array, books_MxKxS: jax.Array) -> jax.Array:
  """Rows [C, M * S] from their product-quantizer codes: subvector m of a
  row is centroid codes[m] of codebook m (K centroids of S dimensions)."""
  m = codes_CxM.shape[1]
  parts_CxMxS = books_MxKxS[jnp.arange(m)[None], codes_CxM.astype(jnp.int32)]
  return parts_CxMxS.reshape(codes_CxM.shape[0], -1)


@functools.lru_cache(maxsize=16)
def _searcher(mesh: Mesh, k: int, block: int, columns: bool = False,
              recall_target: float | None = None, decoded: bool = False):
  """One jitted search per (mesh, k, corpus block); jit caches the shapes.
  With `columns` it takes the real query rows too and also returns the
  corpus rows' top-k over the query block, split over `data`; with
  `recall_target`, approximate tile top-k (`tile_top_k.tile_top_k`); with
  `decoded`, the corpus is product-quantizer codes and the codebooks come
  last (`pq_decode`)."""
  def shard(q_QxD, c_CxD, n_valid, *extra):
    return _shard_top_k(q_QxD, c_CxD, n_valid,
                        extra[0] if columns else None,
                        extra[-1] if decoded else None, k=k, block=block,
                        recall_target=recall_target)

  per_shard = jax.shard_map(
      shard, mesh=mesh,
      in_specs=(P(), P(partitioning.DATA), P()) + (P(),) * (columns + decoded),
      out_specs=(P(partitioning.DATA),) * (4 if columns else 2))

  def search(q_QxD, c_CxD, n_valid, *extra):
    # [devices, Q, k] -> [Q, devices * k]: the merge all-gathers k candidates
    # per device. Device order is corpus order, so lower indices stay first
    # on equal similarity.
    top_SxQxK, idx_SxQxK, *cols = per_shard(q_QxD, c_CxD, n_valid, *extra)
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


def corpus_layout(rows: int, k: int, block: int, devices: int
                  ) -> tuple[int, int]:
  """The corpus block's rows (at most `block`) and the corpus rows padded
  so that each device's shard is a whole number of blocks."""
  shard_rows = _ceil_div(rows, devices)
  corpus_block = tile_top_k.tile_rows(_balanced_block(shard_rows, block), k)
  return corpus_block, devices * _ceil_div(shard_rows,
                                           corpus_block) * corpus_block


def place_corpus(corpus: np.ndarray, k: int, block: int, mesh: Mesh
                 ) -> tuple[jax.Array, int]:
  """The corpus rows split over `data` (`corpus_layout`), and the corpus
  block's rows."""
  corpus_block, padded = corpus_layout(len(corpus), k, block, mesh.size)
  return _put_corpus(corpus, padded, mesh), corpus_block


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


@functools.partial(jax.jit, static_argnames="k")
def merge_top_k(top_NxA: jax.Array, idx_NxA: jax.Array, part_NxB: jax.Array,
                 part_idx_NxB: jax.Array, offset: jax.Array, *, k: int
                 ) -> tuple[jax.Array, jax.Array]:
  """Each row's top-k over the running top-k and a later query block's
  (its indices shifted by `offset`): equal similarities keep the running
  one's, the lower query indices, first (`lax.top_k` prefers the earlier
  position), as one search over all the blocks would."""
  top = jnp.concatenate([top_NxA, part_NxB], axis=1)
  idx = jnp.concatenate([idx_NxA, part_idx_NxB + offset], axis=1)
  top_NxK, pos_NxK = lax.top_k(top, min(k, top.shape[1]))
  return top_NxK, jnp.take_along_axis(idx, pos_NxK, axis=1)


def _first_columns(padded_rows: int, mesh: Mesh,
                   columns_from: Neighbours | None
                   ) -> tuple[jax.Array, jax.Array]:
  """The running column top-k before the first block searched: none, or
  `columns_from` (that of the blocks skipped), on the devices."""
  top, idx = columns_from if columns_from is not None else (
      np.zeros((0, 0), np.float32), np.zeros((0, 0), np.int32))
  missing = padded_rows - len(top)
  split = partitioning.batch_sharding(mesh, 0)
  return tuple(partitioning.put_global(
      np.concatenate([a, np.full((missing, a.shape[1]), fill, a.dtype)]),
      split) for a, fill in ((top, -np.inf), (idx, 0)))


def _blocked_search(queries: np.ndarray, corpus: np.ndarray, k: int,
                    block: int, mesh: Mesh | None, skip: Collection[int],
                    columns: bool, recall_target: float | None = None,
                    columns_from: Neighbours | None = None
                    ) -> Iterator[tuple]:
  """`knn_blocks`, or with `columns` `both_ways_blocks`, on checked inputs."""
  todo = [b for b in range(num_blocks(len(queries), block)) if b not in skip]
  if columns and (set(skip) != set(range(len(skip)))
                  or (columns_from is None) != (not skip)):
    raise ValueError("both ways, the blocks skipped are the first ones, and "
                     "columns_from holds their column top-k")
  if not todo:
    return
  mesh = partitioning.make_mesh(-1) if mesh is None else mesh
  corpus_dev, corpus_block = place_corpus(corpus, k, block, mesh)
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
    query_block = tile_top_k.tile_rows(query_block, k)

  running = (_first_columns(corpus_dev.shape[0], mesh, columns_from)
             if columns else None)

  def dispatch(b: int) -> tuple[int, int, Any]:
    nonlocal running
    q = queries[b * block:(b + 1) * block]
    rows = len(q)
    padded = (tile_top_k.last_block_rows(rows, query_block, k) if columns
              else query_block)
    if rows < padded:
      q = np.concatenate([q, np.zeros((padded - rows, q.shape[1]), q.dtype)])
    q_valid = (np.int32(rows),) if columns else ()
    sims, idx, *cols = searcher(partitioning.put_global(q, replicated),
                                corpus_dev, n_valid, *q_valid)
    if cols:  # merged on the device; positions in the block to query indices
      running = merge_top_k(*running, *cols, np.int32(b * block), k=k)
      cols = running
    return b, rows, (sims, idx, *cols)

  def fetch(dispatched) -> tuple:
    b, rows, result = dispatched
    sims, idx, *cols = partitioning.fetch(result)
    return b, sims[:rows], idx[:rows], *(c[:len(corpus)] for c in cols)

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
# `knn`) and gives the y columns' top-k over this x block, merged on the
# device into the y rows' running top-k in block order. The N x N x d
# product is computed once instead of twice.
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
                     skip: int = 0, columns_from: Neighbours | None = None,
                     recall_target: float | None = None
                     ) -> Iterator[BothWaysBlock]:
  """`knn` of x in y and of y in x, one x block at a time.

  Yields (b, sims, idx, col_sims, col_idx) for x rows [b * block, (b + 1) *
  block) in increasing b from b = `skip`: sims and idx as `knn_blocks` of x
  in y; col_sims and col_idx [Ny, <= k] are each y row's top-k among x rows
  [0, (b + 1) * block) (indices into x), merged on the device: the last
  block's equal `knn` of y in x. A run resumed after block `skip` - 1
  passes that block's columns as `columns_from`. Arguments as in `knn`;
  `names` name x and y. With `recall_target` (in (0, 1]) each tile's
  top-k is `lax.approx_max_k`'s at that recall (TPU-KNN): the neighbours
  are approximate on TPU, exact on XLA's fallback.
  """
  x, y = check_inputs(x, y, k, block, names)
  check_inputs(y, x, k, block, names[::-1])
  return _blocked_search(x, y, k, block, mesh, range(skip), columns=True,
                         recall_target=recall_target,
                         columns_from=columns_from)


def both_ways(x: np.ndarray | jax.Array, y: np.ndarray | jax.Array, k: int,
              *, block: int = 8192, mesh: Mesh | None = None,
              names: tuple[str, str] = ("x", "y")
              ) -> tuple[Neighbours, Neighbours]:
  """`knn` of x in y and of y in x, from one product (`both_ways_blocks`);
  `names` name x and y."""
  rows, columns = [], None
  for _, sims, idx, *columns in both_ways_blocks(x, y, k, block=block,
                                                 mesh=mesh, names=names):
    rows.append((sims, idx))  # the columns so far: only the last are kept
  return tuple(np.concatenate(a) for a in zip(*rows)), tuple(columns)


def neighbourhood_means(fwd_sims_NxK: np.ndarray, bwd_sims_MxK: np.ndarray
                        ) -> tuple[np.ndarray, np.ndarray]:
  """The mean similarity of each x to its k nearest y, and of each y to its
  k nearest x (CSLS's r terms, the margin's neighbourhood), from the
  similarities of `both_ways`, in their dtype."""
  return fwd_sims_NxK.mean(axis=1), bwd_sims_MxK.mean(axis=1)
