"""Mining N x N sentences from sharded float16 files through faiss indexes.

The vectors are synthetic, not an encoder's: clustered unit vectors (every
row a random cluster centre plus noise), a tenth of the target rows a noisy
copy of a source row (the planted pairs, the gold), the rest drawn from the
clusters independently. Both sides are written as float16 shards with
their sidecars, then mined with `pipeline.mine` as `paraflax mine --index`
does: each side's index trained on a seeded sample, filled shard by
shard, searched both ways with exact re-ranking from the memory-mapped
shards (once per --rerank value, from the same indexes), ratio margin,
`max` retrieval. Reports the time of each phase, the peak resident memory
of the mining process, the pairs mined and, against the planted pairs,
precision / recall / F1 at the F1-optimal threshold and at 1.04 and 1.06
(the fixed thresholds of WikiMatrix and stopes). --peer: faiss driven
directly on the same shards, and the share of each side's pairs the other
finds. A rerun with the same --work reuses the shards it wrote.

On one core (the JSON names how many the process had):
  taskset -c 1 env OMP_NUM_THREADS=1 python lab/benchmarks/mining_scale.py \\
      --rows 10000000 --rerank 16 0 --peer --work /tmp/scale \\
      --output lab/results/mining_ann.scale-1e7.amd-epyc-1core.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time

import numpy as np


def cpu_name() -> str:
  with open("/proc/cpuinfo", encoding="utf-8") as f:
    for line in f:
      if line.startswith("model name"):
        return line.split(":", 1)[1].strip()
  return platform.processor()


def write_corpus(work: str, rows: int, dim: int, shards: int, clusters: int,
                 planted: float, seed: int) -> np.ndarray:
  """x and y float16 shards under work/x, work/y; the gold target of each
  source row (-1: none)."""
  from paraflax.mining import embeddings_io  # pylint: disable=g-import-not-at-top
  rng = np.random.default_rng(seed)
  centres = rng.normal(size=(clusters, dim)).astype(np.float32)
  centres /= np.linalg.norm(centres, axis=1, keepdims=True)
  spread = 0.9 / np.sqrt(dim)  # a row's cosine to its centre about 0.75

  def side() -> np.ndarray:
    out = np.empty((rows, dim), np.float32)
    for start in range(0, rows, 1_000_000):
      n = min(1_000_000, rows - start)
      out[start:start + n] = (centres[rng.integers(clusters, size=n)]
                              + spread * rng.normal(size=(n, dim)))
    return out

  x = side()
  y = side()
  gold_n = int(rows * planted)
  src = rng.permutation(rows)[:gold_n]
  tgt = rng.permutation(rows)[:gold_n]
  for start in range(0, gold_n, 1_000_000):
    s, t = src[start:start + 1_000_000], tgt[start:start + 1_000_000]
    y[t] = x[s] + 0.7 * spread * rng.normal(size=(len(s), dim))
  gold = np.full(rows, -1, np.int64)
  gold[src] = tgt
  per = -(-rows // shards)
  for name, matrix in (("x", x), ("y", y)):
    os.makedirs(os.path.join(work, name), exist_ok=True)
    for i in range(shards):
      embeddings_io.write(os.path.join(work, name, f"part-{i:05d}.f16"),
                          matrix[i * per:(i + 1) * per], fp16=True,
                          overwrite=True)
  return gold


def quality(pairs, gold: np.ndarray, gold_n: int) -> dict:
  """P/R/F1 (x 100) of the mined pairs against the planted ones at the
  F1-optimal threshold and at fixed ones."""
  correct = gold[pairs.src] == pairs.tgt
  order = np.argsort(-pairs.score, kind="stable")
  hits = np.cumsum(correct[order])
  kept = np.arange(1, len(order) + 1)
  f1 = 2 * hits / (kept + gold_n)
  best = int(np.argmax(f1))

  def at(n: int) -> dict:
    tp = int(hits[n - 1]) if n else 0
    return {"kept": n, "precision": 100 * tp / max(n, 1),
            "recall": 100 * tp / gold_n, "f1": 200 * tp / (n + gold_n)}

  out = {"f1_optimal": {"threshold": float(pairs.score[order][best]),
                        **at(best + 1)}}
  for cut in (1.04, 1.06):
    out[f"at_{cut}"] = at(int(np.count_nonzero(pairs.score >= cut)))
  return out


def _read_tsv(path: str):
  from paraflax.mining import margin  # pylint: disable=g-import-not-at-top
  with open(path, "rb") as f:
    table = np.array(f.read().split(), np.float64).reshape(-1, 3)
  return margin.Mined(table[:, 1].astype(np.int64),
                      table[:, 2].astype(np.int64), table[:, 0])


def _tsv(work: str, rerank: int) -> str:
  return os.path.join(work, f"mined.rerank{rerank}.tsv")


def mine_only(args: argparse.Namespace) -> None:
  """Loads and indexes the shards of args.work, then mines them once per
  --rerank value from the same indexes, into child.json."""
  from paraflax.mining import index_build  # pylint: disable=g-import-not-at-top
  from paraflax.mining import pipeline  # pylint: disable=g-import-not-at-top
  from paraflax.mining import sides as sides_lib  # pylint: disable=g-import-not-at-top
  result = {}
  t = time.perf_counter()
  src, tgt = sides_lib.load_sides(
      [os.path.join(args.work, s, "part-*.f16") for s in "xy"], None, True,
      [None, None])
  result["load_s"] = time.perf_counter() - t
  folders = [os.path.join(args.work, f"index-{s}") for s in "xy"]
  gold = np.load(os.path.join(args.work, "gold.npy"))
  gold_n = int(np.count_nonzero(gold >= 0))
  for rerank in args.rerank:
    options = pipeline.Options(k=args.k, index=args.index, nprobe=args.nprobe,
                               rerank=rerank, block=args.block,
                               retrieval="max")
    if "index_build_s" not in result:
      t = time.perf_counter()
      for side, folder in zip((src, tgt), folders):
        index_build.build(folder, side.emb, options.spec,
                          shard_prints=side.shard_prints)
      result["index_build_s"] = time.perf_counter() - t
      result["index_bytes"] = [index_build.memory_bytes(f) for f in folders]
    out = _tsv(args.work, rerank)
    t = time.perf_counter()
    pairs = pipeline.mine(src, tgt, options, out, overwrite=True,
                          index_folders=folders)
    run = {"pairs": pairs, "mine_s": time.perf_counter() - t,
           "peak_rss_bytes": 1024 * resource.getrusage(
               resource.RUSAGE_SELF).ru_maxrss,
           "quality": quality(_read_tsv(out), gold, gold_n)}
    result.setdefault("runs", {})[str(rerank)] = run
  result["settings"] = _settings(args)
  with open(os.path.join(args.work, "child.json"), "w") as f:
    json.dump(result, f)


def peer_only(args: argparse.Namespace) -> dict:
  """faiss driven directly with the same string, sample and nprobe, as
  stopes does: read the shards, train, add, search both ways, ratio
  margin and `max` in numpy (no re-ranking). Times and pairs."""
  import faiss  # pylint: disable=g-import-not-at-top
  from paraflax.mining import index_spec  # pylint: disable=g-import-not-at-top
  from paraflax.mining import margin  # pylint: disable=g-import-not-at-top
  from paraflax.mining import sides as sides_lib  # pylint: disable=g-import-not-at-top
  result = {}
  src, tgt = sides_lib.load_sides(
      [os.path.join(args.work, s, "part-*.f16") for s in "xy"], None, True,
      [None, None])
  spec = index_spec.Spec(args.index)
  t = time.perf_counter()
  xu, yu = (index_spec.unit(np.asarray(side.emb)) for side in (src, tgt))
  result["load_s"] = time.perf_counter() - t
  found, build_s, search_s = [], 0.0, 0.0
  for queries, corpus in ((xu, yu), (yu, xu)):
    t = time.perf_counter()
    index = faiss.index_factory(corpus.shape[1], args.index,
                                faiss.METRIC_INNER_PRODUCT)
    for part in (index, faiss.extract_index_ivf(index)):
      part = faiss.downcast_index(part)
      if hasattr(part, "do_polysemous_training"):
        part.do_polysemous_training = False
    sample = index_spec.default_sample(spec, corpus.shape[1], len(corpus))
    picked = np.sort(np.random.default_rng(0).choice(
        len(corpus), sample, replace=False))
    index.train(corpus[picked])
    # As stopes does: the index filled shard by shard, searched a block of
    # queries at a time (faiss 1.15.1 given a side's 10^7 rows and queries
    # in one call each died here with a segmentation fault).
    per = -(-len(corpus) // args.shards)
    for start in range(0, len(corpus), per):
      index.add(corpus[start:start + per])
    build_s += time.perf_counter() - t
    t = time.perf_counter()
    faiss.extract_index_ivf(index).nprobe = args.nprobe
    blocks = [index.search(queries[start:start + args.block], args.k)
              for start in range(0, len(queries), args.block)]
    found.append(tuple(np.concatenate(b) for b in zip(*blocks)))
    search_s += time.perf_counter() - t
  t = time.perf_counter()
  pairs = margin.select(margin.from_neighbours(*found, margin="ratio"), "max")
  result.update({"index_build_s": build_s, "search_s": search_s,
                 "margin_s": time.perf_counter() - t,
                 "pairs": len(pairs.score)})
  gold = np.load(os.path.join(args.work, "gold.npy"))
  result["quality"] = quality(pairs, gold, int(np.count_nonzero(gold >= 0)))
  key = lambda mined: mined.src * len(xu) + mined.tgt
  theirs = key(pairs)
  for rerank in args.rerank:
    ours = key(_read_tsv(_tsv(args.work, rerank)))
    result.setdefault("runs", {})[str(rerank)] = {
        "share_of_our_pairs": float(np.isin(ours, theirs).mean()),
        "share_of_its_pairs_we_find": float(np.isin(theirs, ours).mean())}
  result["peak_rss_bytes"] = 1024 * resource.getrusage(
      resource.RUSAGE_SELF).ru_maxrss
  result["total_mining_s"] = (result["load_s"] + build_s + search_s
                              + result["margin_s"])
  return result


_CORPUS = ("rows", "dim", "shards", "clusters", "planted")


def _settings(args: argparse.Namespace, keys: tuple[str, ...] = (
    *_CORPUS, "index", "nprobe", "rerank", "k", "block")) -> dict:
  return {k: getattr(args, k) for k in keys}


def _child(args: argparse.Namespace, what: str, name: str) -> dict:
  """The result of `--{what}-only` in a process of its own, or the one a
  run of the same settings left in --work."""
  path = os.path.join(args.work, name)
  found = _read_json(path) if os.path.exists(path) else {}
  if found.get("settings") == _settings(args):
    return found
  if what == "mine":  # what it measures starts from the shards alone
    for side in "xy":
      shutil.rmtree(os.path.join(args.work, f"index-{side}"),
                    ignore_errors=True)
  subprocess.run([sys.executable, __file__, f"--{what}-only", *sys.argv[1:]],
                 check=True)
  return _read_json(path)


def _read_json(path: str):
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rows", type=int, default=1_000_000)
  parser.add_argument("--dim", type=int, default=64)
  parser.add_argument("--shards", type=int, default=10)
  parser.add_argument("--clusters", type=int, default=10_000)
  parser.add_argument("--planted", type=float, default=0.1)
  parser.add_argument("--index", default="IVF4096_HNSW32,PQ16x4fs")
  parser.add_argument("--nprobe", type=int, default=8)
  parser.add_argument("--rerank", type=int, nargs="+", default=[16],
                      help="candidates re-ranked; several values mine the "
                      "same indexes once each (the first is the headline)")
  parser.add_argument("--k", type=int, default=4)
  parser.add_argument("--block", type=int, default=65536)
  parser.add_argument("--work", required=True)
  parser.add_argument("--output", required=True)
  parser.add_argument("--keep", action="store_true",
                      help="keep the shards and indexes")
  parser.add_argument("--mine-only", action="store_true",
                      help="(internal) mine the shards of --work")
  parser.add_argument("--peer-only", action="store_true",
                      help="(internal) the peer on the shards of --work")
  parser.add_argument("--peer", action="store_true",
                      help="then faiss directly on the same shards (stopes' "
                      "recipe), reported beside ours")
  args = parser.parse_args()
  if args.mine_only:
    mine_only(args)
    return
  if args.peer_only:
    result = {**peer_only(args), "settings": _settings(args)}
    with open(os.path.join(args.work, "peer.json"), "w") as f:
      json.dump(result, f)
    return
  corpus = _settings(args, _CORPUS)
  done = os.path.join(args.work, "corpus.json")
  written = _read_json(done) if os.path.exists(done) else {}
  if written.get("corpus") == corpus:  # written by an earlier invocation
    write_s, rss_after_writing = written["write_shards_s"], None
  else:
    t = time.perf_counter()
    gold = write_corpus(args.work, args.rows, args.dim, args.shards,
                        args.clusters, args.planted, seed=0)
    write_s = time.perf_counter() - t
    rss_after_writing = 1024 * resource.getrusage(
        resource.RUSAGE_SELF).ru_maxrss
    np.save(os.path.join(args.work, "gold.npy"), gold)
    del gold
    with open(done, "w") as f:  # last: a killed write is written again
      json.dump({"corpus": corpus, "write_shards_s": write_s}, f)
  gold_n = int(args.rows * args.planted)
  # The mining runs in its own process, so that its peak RSS is its own;
  # a rerun with --keep reuses a finished mining of the same settings.
  mined = _child(args, "mine", "child.json")
  del mined["settings"]
  report = {
      "what": "synthetic clustered vectors with planted pairs, float16 "
              "shards, mined with paraflax's index path",
      "hardware": f"{cpu_name()}, {len(os.sched_getaffinity(0))} of "
                  f"{os.cpu_count()} cores",
      "rows_per_side": args.rows, "dim": args.dim, "shards": args.shards,
      "clusters": args.clusters, "planted_pairs": gold_n,
      "index": args.index, "nprobe": args.nprobe, "rerank": args.rerank[0],
      "k": args.k, "margin": "ratio", "retrieval": "max",
      "shard_bytes_per_side": args.rows * args.dim * 2,
      "generator_peak_rss_bytes": rss_after_writing,
      "write_shards_s": write_s, **mined}
  for run in mined["runs"].values():
    run["total_mining_s"] = (mined["load_s"] + mined["index_build_s"]
                             + run["mine_s"])
  if args.peer:
    peer = _child(args, "peer", "peer.json")
    del peer["settings"]
    shares = peer.pop("runs")
    report["peer"] = {"what": "faiss directly, the same index string, "
                              "sample and nprobe; no re-ranking", **peer}
    for rerank, run in mined["runs"].items():
      run.update(shares[rerank])
      run["peer_over_ours_time"] = (peer["total_mining_s"]
                                    / run["total_mining_s"])
  os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
  with open(args.output, "w", encoding="utf-8") as f:
    json.dump(report, f, indent=2)
    f.write("\n")
  print(json.dumps(report, indent=2))
  if not args.keep:
    shutil.rmtree(args.work)


if __name__ == "__main__":
  main()
