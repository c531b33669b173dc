r"""Where one [query block, corpus block] tile of `knn.both_ways_blocks`
spends its time: each piece jitted alone on inputs already on the device, at
the tile shape of 50k x 50k mining with block 8192 on 1 device (8192 query
rows x 7168 corpus rows), seeded random-normal embeddings.

  python lab/benchmarks/mining_tile_profile.py --dims 256 512 \
      [--cxx "c++ -mno-avx512f"] \
      --output lab/results/mining_tile_profile.d256.amd-epyc-2core.json

Pieces: the product (normalise the corpus block, [Q, d] x [d, C]); the
rows' top-k (`tile_top_k.row_top_k`) and the columns' top-k
(`tile_top_k.column_top_k`) of a finished tile; the step (all three in one jit, as the search's scan
step ran them before the kernel); where our kernel is built, both top-k by
it (`native.both_top_k`, no floor: as a query block's first tile) and the
step with it (as the CPU search runs it); then per query block (7 tiles
at 50k): the search of the block against the whole corpus, the fetch of
its results to the host, and the device merge of its columns into the
running top-k (`knn.merge_top_k`).
Each time is the fastest of --repeats, wall and process CPU (both threads);
the cores may be shared, so the load average is recorded (--output is
written by children.write_result, with the run's facts).
"""
from __future__ import annotations

import argparse
import os
import time
from typing import Any, Callable

from paraflax import host

import children  # lab/benchmarks/children.py, beside this script

_K = 4


def _best(fn: Callable[[], Any], repeats: int) -> dict[str, float]:
  """Fastest wall and CPU milliseconds of `fn` after one untimed call."""
  import jax  # pylint: disable=g-import-not-at-top
  jax.block_until_ready(fn())
  walls, cpus = [], []
  for _ in range(repeats):
    wall, cpu = time.perf_counter(), time.process_time()
    jax.block_until_ready(fn())
    walls.append(time.perf_counter() - wall)
    cpus.append(time.process_time() - cpu)
  return {"wall_ms": min(walls) * 1e3, "cpu_ms": min(cpus) * 1e3}


def profile(dim: int, rows: int, query_block: int, repeats: int
            ) -> dict[str, Any]:
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  from jax import lax  # pylint: disable=g-import-not-at-top
  from paraflax import vectors  # pylint: disable=g-import-not-at-top
  from paraflax.mining import knn, native, tile_top_k  # pylint: disable=g-import-not-at-top

  rng = np.random.default_rng(0)
  x = rng.standard_normal((query_block, dim), dtype=np.float32)
  y = rng.standard_normal((rows, dim), dtype=np.float32)
  tiles = knn.num_blocks(rows, query_block)
  corpus_block = -(-rows // tiles // 64) * 64  # as the search rounds it
  q = jax.device_put(np.asarray(vectors.normalize(x)))
  c = jax.device_put(y[:corpus_block])
  n_ok = jnp.int32(corpus_block)

  def product(q, c):
    return jnp.einsum("qd,cd->qc", q, vectors.normalize(c),
                      precision=lax.Precision.HIGHEST)

  def step(q, c):
    s = product(q, c)
    return tile_top_k.row_top_k(s, n_ok, _K), tile_top_k.column_top_k(s, n_ok, _K)

  tile = jax.jit(product)(q, c)
  row, col, both = (jax.jit(f) for f in (
      lambda s: tile_top_k.row_top_k(s, n_ok, _K),
      lambda s: tile_top_k.column_top_k(s, n_ok, _K), step))
  prod = jax.jit(product)
  times = {"product": _best(lambda: prod(q, c), repeats),
           "row_top_k": _best(lambda: row(tile), repeats),
           "column_top_k": _best(lambda: col(tile), repeats),
           "step": _best(lambda: both(q, c), repeats)}
  if native.available():  # both top-k by our kernel, as the CPU search
    no_floor = jnp.full((query_block,), -jnp.inf, jnp.float32)
    cores = len(os.sched_getaffinity(0))
    kernel = lambda s: native.both_top_k(s, n_ok, n_ok, no_floor, _K, _K,
                                         workers=cores)
    by_kernel, step_by_kernel = jax.jit(kernel), jax.jit(
        lambda q, c: kernel(product(q, c)))
    times["kernel_top_k"] = _best(lambda: by_kernel(tile), repeats)
    times["step_kernel"] = _best(lambda: step_by_kernel(q, c), repeats)
  # One query block against the whole corpus, as `both_ways_blocks` runs it,
  # and what the host does with its results.
  times["block_search"] = _best(
      lambda: list(knn.both_ways_blocks(x, y, _K, block=query_block)),
      repeats)
  (_, _, _, col_sims, col_idx), = knn.both_ways_blocks(x, y, _K,
                                                       block=query_block)
  on_device = [jax.device_put(a) for a in (col_sims, col_idx)]
  times["block_fetch"] = _best(lambda: jax.device_get(on_device), repeats)
  merge = lambda: knn.merge_top_k(*on_device, *on_device, np.int32(0), k=_K)  # pylint: disable=unnecessary-lambda-assignment
  times["block_device_merge"] = _best(merge, repeats)
  return {"dim": dim, "tile": [query_block, corpus_block],
          "tiles_per_block": tiles, "ms": times}


def _table(runs: list[dict[str, Any]]) -> str:
  lines = [f"{'piece':<18}" + "".join(
      f"{'d=' + str(r['dim']) + ' wall / cpu ms':>26}" for r in runs)]
  for piece in runs[0]["ms"]:
    cells = []
    for r in runs:
      t = r["ms"][piece]
      cells.append(f"{t['wall_ms']:>12.1f} / "
                   f"{t.get('cpu_ms', float('nan')):>9.1f}")
    lines.append(f"{piece:<18}" + "".join(f"{c:>26}" for c in cells))
  return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--dims", type=int, nargs="+", default=[256, 512])
  parser.add_argument("--rows", type=int, default=50_000)
  parser.add_argument("--block", type=int, default=8192)
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--cxx", help="the compiler command (flags included) "
                      "that builds our kernel, as $CXX; default: $CXX or c++")
  parser.add_argument("--output")
  args = parser.parse_args(argv)
  if args.cxx:  # read when the kernel is built, so the command records it
    os.environ["CXX"] = args.cxx
  kept = host.keep_freed_memory()  # before jax starts, as `paraflax mine`
  report = {**children.run_facts(__file__, argv),
            "benchmark": "mining_tile_profile",
            "keep_freed_memory": kept, "k": _K, "rows": args.rows,
            # The kernel is built by this compiler command (flags included).
            "cxx": os.environ.get("CXX", "c++"),
            "runs": [profile(d, args.rows, args.block, args.repeats)
                     for d in args.dims]}
  print(_table(report["runs"]))
  if args.output:
    children.write_result(args.output, report)
    print(f"wrote {args.output}")


if __name__ == "__main__":
  main()
