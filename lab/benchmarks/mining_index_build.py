r"""Where `paraflax index`'s build time goes, against faiss's own train and
add of the same rows, in one process and alternating, so that both meet
the same load on shared cores.

The rows are mining_scale.py's synthetic clustered vectors (one side,
float16 shards). Each repeat builds the index folder with
`index_build.build` (timing its parts: adding rows, writing the index
after each shard) and then drives faiss directly on the same rows
(`index.train` on the same seeded sample, `index.add` of all rows at
once, as stopes does); the JSON is written after each repeat, by
children.write_result (the run's facts, faiss's version as the peer's).

  nice -n 10 .venv/bin/python lab/benchmarks/mining_index_build.py \
      --rows 100000 --work WORK \
      --output lab/results/mining_index_build.1e5.HW.json
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import children  # pylint: disable=g-import-not-at-top,wrong-import-position
import mining_scale  # pylint: disable=g-import-not-at-top,wrong-import-position

_TIMED = ("_add", "_write")  # index_build's parts that are timed


def _timed(module, names, totals: dict) -> None:
  """Wraps module.name for each name so that its seconds add to totals."""
  for name in names:
    inner = getattr(module, name)

    def timed(*args, _inner=inner, _name=name, **kwargs):
      start = time.perf_counter()
      try:
        return _inner(*args, **kwargs)
      finally:
        totals[_name] = totals.get(_name, 0.0) + time.perf_counter() - start

    setattr(module, name, timed)


def _ours(side, spec, folder: str) -> dict:
  from paraflax.mining import index_build  # pylint: disable=g-import-not-at-top
  shutil.rmtree(folder, ignore_errors=True)
  totals: dict[str, float] = {}
  originals = {name: getattr(index_build, name) for name in _TIMED}
  _timed(index_build, _TIMED, totals)
  try:
    start = time.perf_counter()
    index_build.build(folder, side.emb, spec, shard_prints=side.shard_prints,
                      progress=False)
    total = time.perf_counter() - start
  finally:
    for name, original in originals.items():
      setattr(index_build, name, original)
  return {"build_s": total, "add_s": totals.get("_add", 0.0),
          "write_s": totals.get("_write", 0.0),
          "train_and_rest_s": total - sum(totals.values())}


def _faiss(side, spec) -> dict:
  from paraflax.mining import index_spec  # pylint: disable=g-import-not-at-top
  start = time.perf_counter()
  rows = index_spec.unit(np.asarray(side.emb))
  load_s = time.perf_counter() - start
  index = index_spec.new_index(spec, rows.shape[1])  # polysemous off, too
  sample = index_spec.default_sample(spec, rows.shape[1], len(rows))
  picked = np.sort(np.random.default_rng(spec.seed).choice(
      len(rows), sample, replace=False))
  start = time.perf_counter()
  index.train(rows[picked])
  train_s = time.perf_counter() - start
  start = time.perf_counter()
  index.add(rows)
  add_s = time.perf_counter() - start
  return {"load_s": load_s, "train_s": train_s, "add_s": add_s,
          "build_s": train_s + add_s}


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--rows", type=int, default=100_000)
  parser.add_argument("--dim", type=int, default=64)
  parser.add_argument("--shards", type=int, default=10)
  parser.add_argument("--clusters", type=int, default=10_000)
  parser.add_argument("--index", default="IVF4096_HNSW32,PQ16x4fs")
  parser.add_argument("--repeats", type=int, default=2)
  parser.add_argument("--work", required=True)
  parser.add_argument("--output", required=True)
  args = parser.parse_args(argv)
  from paraflax.mining import index_spec  # pylint: disable=g-import-not-at-top
  from paraflax.mining import sides as sides_lib  # pylint: disable=g-import-not-at-top
  mining_scale.write_corpus(args.work, args.rows, args.dim, args.shards,
                            args.clusters, 0.1, seed=0)
  side, _ = sides_lib.load_sides(
      [os.path.join(args.work, s, "part-*.f16") for s in "xy"], None, True,
      [None, None])
  spec = index_spec.Spec(args.index)
  report = {**children.run_facts(__file__, argv),
            "what": "one side's index: paraflax's build against faiss's "
                    "train and add, alternating in one process",
            "rows": args.rows, "dim": args.dim, "shards": args.shards,
            "index": args.index, "repeats": []}
  for _ in range(args.repeats):
    ours = _ours(side, spec, os.path.join(args.work, "index"))
    report["repeats"].append({"paraflax": ours, "faiss": _faiss(side, spec)})
    print(json.dumps(report["repeats"][-1]), file=sys.stderr)
    children.write_result(args.output, report,
                          peers=children.versions(("faiss-cpu",)))
  shutil.rmtree(args.work)


if __name__ == "__main__":
  main()
