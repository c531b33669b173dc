"""The XLA:CPU kernel for both directions' top-k: the same results as the
XLA ops it replaces, and the search without it where it cannot be built."""
import logging
import os
import pathlib
import platform
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

from paraflax.mining import knn
from paraflax.mining import native
from paraflax.training import partitioning

pytestmark = pytest.mark.skipif(not native.available(),
                                reason="no C++ compiler for the kernel")


def _tile(rows: int, cols: int, n_ok: int, q_ok: int, seed: int = 0
          ) -> np.ndarray:
  """One decimal (many ties); masked positions hold the largest values,
  so any of them that is not masked shows."""
  rng = np.random.default_rng(seed)
  s = np.round(rng.normal(size=(rows, cols)), 1).astype(np.float32)
  s[:, max(n_ok, 0):] = 10
  s[max(q_ok, 0):] = 10
  return s


def _kernel(s, n_ok, q_ok, floor, row_k, col_k, workers):
  return jax.jit(lambda s, floor: native.both_top_k(
      s, n_ok, q_ok, floor, row_k, col_k, workers))(s, floor)


# (rows, cols, n_ok, q_ok, row_k, col_k)
CASES = [
    (320, 448, 448, 320, 4, 4),  # whole blocks of the scan
    (320, 448, 300, 130, 4, 2),  # masks inside a block, two k
    (100, 77, 77, 100, 8, 1),  # no side a multiple of a block
    (256, 128, 3, 2, 4, 4),  # fewer real positions than k: -inf follows
    (64, 64, 0, 0, 2, 3),  # nothing real
    (64, 64, -5, 64, 1, 1),  # a shard's block wholly past the corpus
    # Enough real rows for the columns' lower bound (k groups of 128 rows),
    # which ties (one decimal) meet exactly.
    (600, 200, 200, 600, 4, 4),
    (1100, 70, 60, 1030, 3, 8),
]


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("rows,cols,n_ok,q_ok,row_k,col_k", CASES)
def test_equals_lax_top_k_of_the_masked_tile(rows, cols, n_ok, q_ok, row_k,
                                             col_k, workers):
  s = _tile(rows, cols, n_ok, q_ok)
  no_floor = np.full(rows, -np.inf, np.float32)
  got = _kernel(s, n_ok, q_ok, no_floor, row_k, col_k, workers)
  col_ok = np.arange(cols) < n_ok
  row_ok = np.arange(rows) < q_ok
  want = (*jax.lax.top_k(np.where(col_ok, s, -np.inf), row_k),
          *jax.lax.top_k(np.where(row_ok[:, None], s, -np.inf).T, col_k))
  for g, w in zip(got, want):
    np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@pytest.mark.parametrize("workers", [1, 2])
def test_rows_leave_out_what_the_floor_stops(workers):
  s = _tile(200, 300, 300, 200, seed=3)
  floor = np.quantile(s, 0.99, axis=1).astype(np.float32)
  floor[7] = -np.inf
  top, pos, col_top, col_pos = _kernel(s, 300, 200, floor, 4, 4, workers)
  want_top, want_pos = jax.lax.top_k(
      np.where(s > floor[:, None], s, -np.inf), 4)
  np.testing.assert_array_equal(top, want_top)
  real = np.isfinite(want_top)
  np.testing.assert_array_equal(np.asarray(pos)[real], np.asarray(want_pos)[real])
  # The columns do not see the floor.
  want_col = jax.lax.top_k(s.T, 4)
  np.testing.assert_array_equal(col_top, want_col[0])
  np.testing.assert_array_equal(col_pos, want_col[1])


# XLA keeps the first kernel a process registers: the other instruction
# sets' builds (the compiler told to leave out what this host has) are
# checked in a process each, on the cases above.
_X86 = platform.machine().lower() in ("x86_64", "amd64")


@pytest.mark.skipif(not _X86, reason="x86 instruction-set flags")
@pytest.mark.parametrize("leave_out", ["-mno-avx512f",  # AVX2's compares
                                       "-mno-avx2 -mno-avx512f"])  # portable
def test_other_instruction_sets_give_the_same(leave_out, tmp_path):
  compiler = os.environ.get("CXX", "c++")
  env = dict(os.environ, CXX=f"{compiler} {leave_out}",
             **{native.ENV: str(tmp_path)})
  done = subprocess.run(
      [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
       "-n", "0", __file__, "-k", "equals_lax_top_k or floor_stops"],
      env=env, capture_output=True, text=True, check=False)
  assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
  assert len(os.listdir(tmp_path)) == 1, "the variant was not built"


@pytest.fixture
def without_kernel(monkeypatch):
  """The search as it runs where the kernel cannot be built."""
  knn._searcher.cache_clear()  # compiled searches hold the kernel or not
  monkeypatch.setattr(native, "available", lambda: False)
  yield
  knn._searcher.cache_clear()


def _search(num_devices):
  # Exact ties in both directions, a short last block, groups on both sides.
  rng = np.random.default_rng(5)
  x, y = (np.abs(rng.normal(size=(600, 8))).astype(np.float32)
          for _ in range(2))
  y[300] = y[10]
  x[590] = x[550] = x[520] = y[10]
  mesh = partitioning.make_mesh(num_devices)
  return (list(knn.both_ways_blocks(x, y, 3, block=256, mesh=mesh)),
          knn.knn(x, y, 3, block=256, mesh=mesh))


@pytest.mark.parametrize("num_devices", [1, 8])
def test_search_gives_what_it_gives_without_the_kernel(num_devices, request):
  knn._searcher.cache_clear()
  with_kernel = _search(num_devices)
  request.getfixturevalue("without_kernel")
  by_ops = _search(num_devices)
  for got, want in zip(jax.tree.leaves(with_kernel), jax.tree.leaves(by_ops)):
    np.testing.assert_array_equal(got, want)


@pytest.fixture
def fresh_build(monkeypatch, tmp_path):
  """`available()` asked again, building into an empty folder."""
  monkeypatch.setenv(native.ENV, str(tmp_path))
  native.available.cache_clear()
  yield tmp_path
  native.available.cache_clear()


def test_built_once_whole_into_the_cache(fresh_build):
  assert native.available()
  built = os.listdir(fresh_build)
  assert len(built) == 1 and built[0].endswith(".so"), built
  inode = os.stat(fresh_build / built[0]).st_ino
  native.available.cache_clear()
  assert native.available()  # loads what is there
  assert os.listdir(fresh_build) == built
  assert os.stat(fresh_build / built[0]).st_ino == inode  # not rebuilt


def _age(path: pathlib.Path, seconds: float) -> None:
  then = time.time() - seconds
  os.utime(path, (then, then))


def test_a_build_removes_what_killed_builds_left(fresh_build):
  orphan, running = (fresh_build / f".tmp-x{i}.so" for i in (1, 2))
  orphan.write_bytes(b"half")
  running.write_bytes(b"half")
  _age(orphan, 2 * 3600)
  assert native.available()
  assert not orphan.exists()
  assert running.exists()  # another process may be building it now


def test_a_build_removes_builds_long_unused(fresh_build):
  unused, recent = (fresh_build / f"tile_top_k-{n}.so" for n in ("a", "b"))
  for build in (unused, recent):
    build.write_bytes(b"an older source's build")
  _age(unused, native.UNUSED_SECONDS + 60)
  _age(recent, native.UNUSED_SECONDS - 3600)
  assert native.available()
  assert not unused.exists() and recent.exists()
  (built,) = set(fresh_build.iterdir()) - {recent}
  _age(built, native.UNUSED_SECONDS + 60)
  native.available.cache_clear()
  assert native.available()  # loading it marks it used
  assert time.time() - os.stat(built).st_mtime < 3600


def test_without_a_compiler_the_search_warns_and_keeps_xla(
    fresh_build, monkeypatch, caplog):
  monkeypatch.setenv("CXX", "false")  # a compiler that always fails
  with caplog.at_level(logging.WARNING):
    assert not native.available()
  assert "tile_top_k.cc" in caplog.text and "false" in caplog.text
  assert os.listdir(fresh_build) == []  # no half-written library left


def test_cache_off_builds_nothing(fresh_build, monkeypatch):
  monkeypatch.setenv(native.ENV, "off")
  monkeypatch.setenv("CXX", "false")
  assert not native.available()
