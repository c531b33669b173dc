"""Blocked, sharded exact k-NN against a brute-force numpy search."""
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from paraflax import errors
from paraflax.mining import knn
from paraflax.mining import tile_top_k
from paraflax.training import partitioning


def _brute_force(queries, corpus, k):
  """Full cosine matrix in float64; stable sort puts lower indices first."""

  def unit(x):
    x = np.asarray(x, np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-8)

  sims = unit(queries) @ unit(corpus).T
  idx = np.argsort(-sims, axis=1, kind="stable")[:, :k]
  return np.take_along_axis(sims, idx, axis=1), idx


def _data(nq, nc, d, seed=0):
  rng = np.random.default_rng(seed)
  return (rng.normal(size=(nq, d)).astype(np.float32),
          rng.normal(size=(nc, d)).astype(np.float32))


# (queries, corpus, dim, k, block)
SHAPES = [
    (37, 300, 16, 5, 16),  # neither side a multiple of the block or devices
    (9, 7, 4, 1, 4),  # k = 1; fewer corpus rows than devices
    (6, 7, 4, 7, 2),  # k = corpus size
    (70, 130, 8, 9, 4),  # many corpus blocks per device, k > block
]


@pytest.mark.parametrize("num_devices", [1, 8])
@pytest.mark.parametrize("nq,nc,d,k,block", SHAPES)
def test_equals_brute_force(nq, nc, d, k, block, num_devices):
  queries, corpus = _data(nq, nc, d)
  sims, idx = knn.knn(queries, corpus, k, block=block,
                      mesh=partitioning.make_mesh(num_devices))
  want_sims, want_idx = _brute_force(queries, corpus, k)
  assert sims.shape == idx.shape == (nq, k)
  assert sims.dtype == np.float32 and idx.dtype == np.int32
  np.testing.assert_array_equal(idx, want_idx)
  np.testing.assert_allclose(sims, want_sims, atol=1e-6)


def test_ties_take_lower_index_on_any_device_count():
  queries, corpus = _data(37, 300, 16, seed=1)
  # Copies of row 3 in another block of the same device and on another
  # device (8 devices: 38 rows each), queried by row 3 itself.
  corpus[20] = corpus[200] = corpus[3]
  queries[5] = corpus[3]
  results = [knn.knn(queries, corpus, 6, block=16,
                     mesh=partitioning.make_mesh(n)) for n in (1, 8)]
  np.testing.assert_array_equal(results[0][1], results[1][1])
  np.testing.assert_allclose(results[0][0], results[1][0], atol=1e-6)
  np.testing.assert_array_equal(results[1][1][5, :3], [3, 20, 200])
  np.testing.assert_array_equal(results[1][1],
                                _brute_force(queries, corpus, 6)[1])


@pytest.mark.parametrize("passes", [False, True])
@pytest.mark.parametrize("n_ok", [320, 200, 130, 3])
def test_tile_top_k_equals_lax_top_k_of_the_masked_tile(n_ok, passes,
                                                        monkeypatch):
  monkeypatch.setattr(tile_top_k, "_passes_pay", lambda: passes)
  # Values rounded to one decimal tie often; the positions from n_ok on
  # hold the largest values, so any of them that is not masked shows.
  rng = np.random.default_rng(6)
  s = np.round(rng.normal(size=(320, 320)), 1).astype(np.float32)
  s[n_ok:] = s[:, n_ok:] = 10
  ok = np.arange(320) < n_ok
  for got, want in (
      (tile_top_k.row_top_k(s, n_ok, 4),
       jax.lax.top_k(np.where(ok, s, -np.inf), 4)),
      (tile_top_k.column_top_k(s, n_ok, 4),
       jax.lax.top_k(np.where(ok[:, None], s, -np.inf).T, 4))):
    np.testing.assert_array_equal(got[0][:n_ok], want[0][:n_ok])
    np.testing.assert_array_equal(got[1][:n_ok], want[1][:n_ok])


@pytest.mark.parametrize("k", [1, 4, 8])
def test_top_k_by_passes_equals_lax_top_k_with_ties_and_minus_inf(k):
  # One decimal: many ties; whole rows and runs of -inf, as masks leave.
  rng = np.random.default_rng(7)
  x = np.round(rng.normal(size=(64, 40)), 1).astype(np.float32)
  x[3] = -np.inf
  x[5, 2:] = -np.inf
  x[9, ::2] = -np.inf
  got = jax.jit(lambda a: tile_top_k._top_k_by_passes(a, k))(x)
  want = jax.lax.top_k(x, k)
  np.testing.assert_array_equal(got[0], want[0])
  np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("num_devices", [1, 8])
def test_both_ways_equals_brute_force_with_groups_and_a_short_last_block(
    num_devices):
  # Blocks of 256: the tiles take the grouped top-k (rows in groups of 64
  # columns, columns in groups of 32 rows) on one device, and the last x
  # block (88 rows) is padded to 128, not 256, with its boundary inside a
  # group. Copies make exact ties in both directions;
  # x[595] and y[7] are negative to every row of the other side, so the
  # zero padding (similarity 0) would win wherever it is not masked.
  x, y = (np.abs(a) for a in _data(600, 600, 8, seed=5))
  x[595], y[7] = -x[595], -y[7]
  y[300] = y[10]
  x[590] = x[550] = x[520] = y[10]
  (fwd, bwd) = knn.both_ways(x, y, 2, block=256,
                             mesh=partitioning.make_mesh(num_devices))
  for (sims, idx), (want_sims, want_idx) in zip(
      (fwd, bwd), (_brute_force(x, y, 2), _brute_force(y, x, 2))):
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_allclose(sims, want_sims, atol=1e-6)
  np.testing.assert_array_equal(bwd[1][10], [520, 550])


def test_both_ways_resumed_after_a_block_equals_one_pass():
  x, y = (np.abs(a) for a in _data(600, 300, 8, seed=6))
  x[590] = x[20] = y[10]  # a tie across blocks: the earlier x row first
  whole = list(knn.both_ways_blocks(x, y, 3, block=128))
  _, _, _, *columns = whole[1]  # what a run killed after block 1 kept
  resumed = list(knn.both_ways_blocks(x, y, 3, block=128, skip=2,
                                      columns_from=tuple(columns)))
  assert [p[0] for p in resumed] == [2, 3, 4]
  for got, want in zip(resumed, whole[2:]):
    for a, b in zip(got[1:], want[1:]):
      np.testing.assert_array_equal(a, b)
  np.testing.assert_array_equal(resumed[-1][4], _brute_force(y, x, 3)[1])
  assert resumed[-1][4][10][0] == 20
  with pytest.raises(ValueError, match="columns_from"):
    list(knn.both_ways_blocks(x, y, 3, block=128, skip=2))


def test_bfloat16_and_jax_inputs():
  queries, corpus = _data(20, 50, 8, seed=2)
  queries = queries.astype(ml_dtypes.bfloat16)
  corpus = jnp.asarray(corpus, jnp.bfloat16)
  sims, idx = knn.knn(queries, corpus, 4, block=8)
  want_sims, want_idx = _brute_force(queries, corpus, 4)
  np.testing.assert_array_equal(idx, want_idx)
  np.testing.assert_allclose(sims, want_sims, atol=1e-6)


def test_zero_rows_give_finite_output():
  queries, corpus = _data(10, 30, 8, seed=3)
  queries[0] = 0
  corpus[5] = 0
  sims, idx = knn.knn(queries, corpus, 3, block=8)
  assert np.isfinite(sims).all()
  # A zero query is equally far from everything: similarity 0, first rows.
  np.testing.assert_array_equal(sims[0], 0)
  np.testing.assert_array_equal(idx[0], [0, 1, 2])
  np.testing.assert_array_equal(idx, _brute_force(queries, corpus, 3)[1])


def test_one_compile_for_all_query_blocks():
  queries, corpus = _data(50, 40, 8, seed=4)
  mesh = partitioning.make_mesh(8)
  for n in (50, 45, 16):  # 4, 3 and 1 query blocks
    idx = knn.knn(queries[:n], corpus, 3, block=16, mesh=mesh)[1]
    np.testing.assert_array_equal(idx, _brute_force(queries[:n], corpus, 3)[1])
  # 40 rows over 8 devices: one block of 5 rows each.
  assert knn._searcher(mesh, 3, 5)._cache_size() == 1


def test_memory_is_bounded_by_the_block():
  mesh = partitioning.make_mesh(8)
  nq, block, d = 64, 64, 16
  rows = 8 * 50 * block  # 50 corpus blocks per device
  compiled = knn._searcher(mesh, 5, block).lower(
      np.zeros((nq, d), np.float32),
      knn._put_corpus(np.zeros((rows, d), np.float32), rows, mesh),
      np.int32(rows)).compile()
  # The full [queries, corpus] similarity matrix would need nq * rows * 4
  # bytes (6.5 MB); the scan needs a few [block, block] tiles.
  assert compiled.memory_analysis().temp_size_in_bytes < nq * rows * 4 / 20


def test_nan_row_names_the_row_and_side():
  queries, corpus = _data(10, 30, 8, seed=5)
  corpus[17, 3] = np.nan
  with pytest.raises(errors.DataError, match=r"corpus row\(s\) 17 "):
    knn.knn(queries, corpus, 3)
  queries[4, 0] = np.inf
  with pytest.raises(errors.DataError, match=r"x row\(s\) 4 "):
    knn.knn(queries, corpus, 3, names=("x", "y"))


def test_k_larger_than_corpus():
  queries, corpus = _data(10, 7, 8)
  with pytest.raises(errors.ConfigError, match=r"k=8 .* 7 rows"):
    knn.knn(queries, corpus, 8)
  with pytest.raises(errors.ConfigError, match=r"k=0"):
    knn.knn(queries, corpus, 0)


def test_bad_shapes():
  queries, corpus = _data(10, 7, 8)
  with pytest.raises(errors.DataError, match="dimension 8 .* 5"):
    knn.knn(queries, corpus[:, :5], 2)
  with pytest.raises(errors.DataError, match="2-D"):
    knn.knn(queries[0], corpus, 2)
