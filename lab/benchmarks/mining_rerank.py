"""What exact re-ranking costs and buys in index mining, against faiss's own
re-ranking (`IndexRefineFlat`).

`paraflax mine --index` scores each query's best `--rerank` candidates of
the index again with exact cosines, reading the candidates' rows from the
float16 shards where they lie (memory-mapped) and converting them to
float32. faiss's `IndexRefineFlat` does the same from a float32 copy of
every row held in memory (4 bytes a dimension a row, where the shards
take 2 on disk). Both search the same trained index, with the same nprobe
and candidate counts, over the same queries:

* ours: `index_search.search_blocks` (what `paraflax mine --index` runs),
  its time split into the index's search and the re-ranking (the rest);
* faiss: the index alone, then `IndexRefineFlat` with k_factor =
  rerank / k.

Recall@k of each against exact neighbours (float32 products of all rows).
The vectors: `mining_scale.write_corpus`'s synthetic clustered rows (a
tenth of the targets noisy copies of sources), as float16 shards.
children.write_result writes --output, with the run's facts and faiss's
version as the peer's.

  python lab/benchmarks/mining_rerank.py --rows 100000 --work /tmp/rerank \\
      --output lab/results/mining_rerank.1e5.HW.json
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import children  # pylint: disable=g-import-not-at-top,wrong-import-position
import mining_ann  # pylint: disable=g-import-not-at-top,wrong-import-position
import mining_scale  # pylint: disable=g-import-not-at-top,wrong-import-position


def _parse(argv: list[str] | None) -> argparse.Namespace:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--rows", type=int, default=100_000)
  parser.add_argument("--dim", type=int, default=64)
  parser.add_argument("--shards", type=int, default=10)
  parser.add_argument("--clusters", type=int, default=1_000)
  parser.add_argument("--index", default="IVF256_HNSW32,PQ16x4fs")
  parser.add_argument("--nprobe", type=int, default=8)
  parser.add_argument("--k", type=int, default=4)
  parser.add_argument("--rerank", type=int, nargs="+", default=[0, 16, 64])
  parser.add_argument("--block", type=int, default=8192)
  parser.add_argument("--repeats", type=int, default=3,
                      help="each search timed this many times; the least")
  parser.add_argument("--work", required=True, help="scratch folder")
  parser.add_argument("--output", required=True)
  return parser.parse_args(argv)


def _exact(x: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
  """[N, k] ids of each x row's k nearest y rows (float32 products, 256
  MiB of them at a time)."""
  out = np.empty((len(x), k), np.int64)
  block = max(1, 2**26 // len(y))
  for start in range(0, len(x), block):
    sims = x[start:start + block] @ y.T
    top = np.argpartition(-sims, k, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(sims, top, axis=1), axis=1)
    out[start:start + block] = np.take_along_axis(top, order, axis=1)
  return out


def _timed(fn, repeats: int = 1):
  """fn()'s result and its least time of `repeats` calls."""
  best = float("inf")
  for _ in range(repeats):
    start = time.perf_counter()
    out = fn()
    best = min(best, time.perf_counter() - start)
  return out, best


def main(argv: list[str] | None = None) -> None:
  args = _parse(argv)
  from paraflax.mining import index_build  # pylint: disable=g-import-not-at-top
  from paraflax.mining import index_search  # pylint: disable=g-import-not-at-top
  from paraflax.mining import index_spec  # pylint: disable=g-import-not-at-top
  from paraflax.mining import sides as sides_lib  # pylint: disable=g-import-not-at-top
  faiss = index_spec.faiss_module()
  if not glob.glob(os.path.join(args.work, "y", "*")):
    mining_scale.write_corpus(args.work, args.rows, args.dim, args.shards,
                              args.clusters, 0.1, seed=0)
  src, tgt = sides_lib.load_sides(
      [os.path.join(args.work, s, "part-*.f16") for s in "xy"], None, True,
      [None, None])
  folder = os.path.join(args.work, "index-" + args.index.replace(",", "_"))
  _, build_s = _timed(lambda: index_build.build(
      folder, tgt.emb, index_spec.Spec(args.index),
      shard_prints=tgt.shard_prints, progress=False))
  x = index_spec.unit(np.asarray(src.emb[:len(src.emb)], np.float32))
  y = index_spec.unit(np.asarray(tgt.emb[:len(tgt.emb)], np.float32))
  exact, exact_s = _timed(lambda: _exact(x, y, args.k))
  queries = index_search.Rows(src.emb, None)
  corpus = index_search.Rows(tgt.emb, None)
  blocks = range(-(-len(x) // args.block))
  rows = []
  for rerank in args.rerank:
    wanted = max(args.k, rerank)
    index = index_search.load(folder, args.nprobe, gpu=False)
    _, search_s = _timed(lambda: [
        index.search(x[b * args.block:(b + 1) * args.block], wanted)
        for b in blocks], args.repeats)
    found, ours_s = _timed(lambda: np.concatenate([
        ids for _, _, ids in index_search.search_blocks(
            index, "ip", queries, corpus, args.k, rerank=rerank,
            block=args.block, todo=blocks, name="x")]), args.repeats)
    refine = faiss.IndexRefineFlat(index, faiss.swig_ptr(y))
    refine.k_factor = wanted / args.k
    (_, peer_ids), peer_s = _timed(
        lambda: (refine if rerank else index).search(x, args.k), args.repeats)
    rows.append({
        "rerank": rerank, "candidates": wanted,
        # The rest of ours past the index's search: reading the float16
        # candidates, their exact cosines and the ordering.
        "ours": {"seconds": ours_s, "index_search_s": search_s,
                 "rest_s": ours_s - search_s,
                 "queries_per_s": len(x) / ours_s,
                 "recall_at_k": mining_ann.recall(found, exact)},
        "faiss": {"seconds": peer_s, "queries_per_s": len(x) / peer_s,
                  "recall_at_k": mining_ann.recall(peer_ids, exact),
                  "what": "IndexRefineFlat (float32 rows in memory)"
                          if rerank else "the index alone"},
        "faiss_over_ours_time": peer_s / ours_s})
    print(json.dumps(rows[-1]), flush=True)
  result = {**children.run_facts(__file__, argv),
            "what": __doc__.split("\n\n")[0].replace("\n", " "),
            "rows_per_side": len(x), "dim": args.dim, "index": args.index,
            "nprobe": args.nprobe, "k": args.k, "block": args.block,
            "index_build_s": build_s, "exact_s": exact_s,
            "float32_copy_bytes": int(y.nbytes),
            "float16_shard_bytes": int(len(y) * args.dim * 2),
            "peak_rss_mib": children.peak_rss_mib(),
            "rows": rows}
  children.write_result(args.output, result,
                        peers=children.versions(("faiss-cpu",)))


if __name__ == "__main__":
  main()
