"""The top-k of one [query block, corpus block] similarity tile, by rows
and, for the search both ways, by columns: XLA ops grouped so that only a
few candidates are ranked, the CPU kernel (`native`, `tile_top_k.cc`) that
takes both in one read where it is built, or `lax.approx_max_k` at a recall
target. Every path keeps `lax.top_k`'s values and tie order (ties to the
lower position); the approximate one on TPU only up to its recall.
"""
from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
from jax import lax

from paraflax.mining import native

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
  """`tile_top_k` by `lax.approx_max_k` at `recall_target`: on TPU the
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


def tile_top_k(s_QxC: jax.Array, n_ok: jax.Array, q_ok: jax.Array | None,
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


def tile_rows(rows: int, k: int) -> int:
  """`rows` rounded up to a multiple of _GROUP where grouping pays."""
  return -(-rows // _GROUP) * _GROUP if rows >= _GROUP * k else rows


def last_block_rows(rows: int, query_block: int, k: int) -> int:
  """The query rows a block of `rows` is padded to when both directions
  come from its tiles: the smallest query_block / 2^j (as `tile_rows`)
  that holds it. A short last block (848 rows at 50k and block 8192) costs
  about its own rows, not 12 % more product for the whole run, and the
  compiled shapes stay few (at most log2(query_block) + 1)."""
  size = query_block
  while size // 2 >= rows:
    size //= 2
  return tile_rows(size, k)
