r"""Where one [query block, corpus block] tile of `knn.both_ways_blocks`
spends its time: each piece jitted alone on inputs already on the device, at
the tile shape of 50k x 50k mining with block 8192 on 1 device (8192 query
rows x 7168 corpus rows), seeded random-normal embeddings.

  python benchmarks/mining_tile_profile.py --dims 256 512 \
      --output benchmarks/results/mining_tile_profile_s7.json

Pieces: the product (normalise the corpus block, [Q, d] x [d, C]); the
rows' top-k (`knn.row_top_k`) and the columns' top-k (`knn.column_top_k`)
of a finished tile; the step (all three in one jit, as the search's scan
step runs them); `step_chunked_S`, the same step with the product made in
column chunks of S (at most --chunk) whose column top-k and row group
maxima are taken while the chunk is in cache (checked against the step);
then per query block (7 tiles at 50k): the search of the block against the
whole corpus, the fetch of its results to the host, and the host merge of
its columns into the running top-k (`merge_columns`).
Each time is the fastest of --repeats, wall and process CPU (both threads);
the cores may be shared, so the load average is recorded.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable

from paraflax import host

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


def _chunk(cols: int, most: int) -> int:
  """The largest multiple of 64 that divides `cols` and is at most `most`."""
  return max(s for s in range(64, min(cols, most) + 1, 64) if cols % s == 0)


def profile(dim: int, rows: int, query_block: int, repeats: int, chunk: int
            ) -> dict[str, Any]:
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  from jax import lax  # pylint: disable=g-import-not-at-top
  from paraflax import vectors  # pylint: disable=g-import-not-at-top
  from paraflax.mining import knn  # pylint: disable=g-import-not-at-top

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
    return knn.row_top_k(s, n_ok, _K), knn.column_top_k(s, n_ok, _K)

  chunk = _chunk(corpus_block, chunk)

  def chunked_step(q, c):
    # Session 7's hypothesis: the product in column chunks ([Q, chunk]
    # float32, sized for the L3), each chunk's column top-k and row group
    # maxima taken while it is in cache; the chunks are kept as the tile
    # from which the rows' candidates are gathered.
    q_rows, per = len(q), chunk // knn._GROUP
    def one(_, xs):
      c_SxD, j = xs
      s_QxS = product(q, c_SxD)
      max_QxG = knn._group_max(s_QxS.reshape(q_rows, per, knn._GROUP),
                               n_ok - j * chunk)
      return None, (s_QxS, max_QxG, knn.column_top_k(s_QxS, n_ok, _K))
    _, (s_NxQxS, max_NxQxG, (col_top, col_idx)) = lax.scan(
        one, None, (c.reshape(-1, chunk, c.shape[1]),
                    jnp.arange(corpus_block // chunk, dtype=jnp.int32)))
    _, group_QxK = lax.top_k(
        jnp.moveaxis(max_NxQxG, 0, 1).reshape(q_rows, -1), _K)
    group_QxK = jnp.sort(group_QxK, axis=1)
    cand_QxKxM = s_NxQxS.reshape(-1, q_rows, per, knn._GROUP)[
        group_QxK // per, jnp.arange(q_rows)[:, None], group_QxK % per]
    return (knn._top_candidates(group_QxK, cand_QxKxM, n_ok),
            (col_top.reshape(-1, _K), col_idx.reshape(-1, _K)))

  tile = jax.jit(product)(q, c)
  row, col, both = (jax.jit(f) for f in (
      lambda s: knn.row_top_k(s, n_ok, _K),
      lambda s: knn.column_top_k(s, n_ok, _K), step))
  prod = jax.jit(product)
  times = {"product": _best(lambda: prod(q, c), repeats),
           "row_top_k": _best(lambda: row(tile), repeats),
           "column_top_k": _best(lambda: col(tile), repeats),
           "step": _best(lambda: both(q, c), repeats)}
  chunked = jax.jit(chunked_step)
  # The same step, reordered: the chunks' products round differently (the
  # matrix product blocks its sums by shape), so values agree to 1e-6.
  for got, want in zip(jax.tree.leaves(chunked(q, c)),
                       jax.tree.leaves(both(q, c))):
    np.testing.assert_allclose(got, want, atol=1e-6)
  times[f"step_chunked_{chunk}"] = _best(lambda: chunked(q, c), repeats)
  # One query block against the whole corpus, as `both_ways_blocks` runs it,
  # and what the host does with its results.
  times["block_search"] = _best(
      lambda: list(knn.both_ways_blocks(x, y, _K, block=query_block)),
      repeats)
  (_, _, _, col_sims, col_idx), = knn.both_ways_blocks(x, y, _K,
                                                       block=query_block)
  on_device = [jax.device_put(a) for a in (col_sims, col_idx)]
  times["block_fetch"] = _best(lambda: jax.device_get(on_device), repeats)
  merge_s = []
  for _ in range(repeats):
    start = time.perf_counter()
    knn.merge_columns(iter([(col_sims, col_idx), (col_sims, col_idx)]), _K)
    merge_s.append(time.perf_counter() - start)
  times["block_host_merge"] = {"wall_ms": min(merge_s) * 1e3}
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
  parser.add_argument("--chunk", type=int, default=512,
                      help="most columns per chunk of step_chunked")
  parser.add_argument("--output")
  args = parser.parse_args(argv)
  kept = host.keep_freed_memory()  # before jax starts, as `paraflax mine`
  report = {"benchmark": "mining_tile_profile",
            "command": " ".join(["python", *sys.argv]),
            "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "keep_freed_memory": kept, "k": _K, "rows": args.rows,
            "load_average": os.getloadavg(),
            "runs": [profile(d, args.rows, args.block, args.repeats,
                             args.chunk)
                     for d in args.dims]}
  report["load_average_after"] = os.getloadavg()
  print(_table(report["runs"]))
  if args.output:
    from paraflax import files  # pylint: disable=g-import-not-at-top
    files.write_text_atomic(args.output, json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
  main()
