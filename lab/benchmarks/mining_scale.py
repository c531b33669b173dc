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
(the fixed thresholds of WikiMatrix and stopes). A rerun with the same
--work reuses the shards it wrote.

--peer: faiss driven directly on the same shards, each variant in a
process of its own (its own peak memory), as stopes does: the same
factory string, sample and nprobe, each side's index filled shard by shard
and its queries searched a block at a time, both read from the float16
shards as they are needed (neither side held whole in float32). Per
--rerank value R: R = 0, the index alone; R > 0, faiss's own re-ranking
with the same budget as ours, `IndexRefineFlat` (float32 rows in memory)
and `IndexRefine` over an fp16 `IndexScalarQuantizer` (float16 rows in
memory, the shards' bytes), k_factor = R / k, so that R candidates are
scored again exactly. Each peer's margin and `max` by paraflax's code and,
with --stopes-python, by stopes' own `mine` (`stopes_child.py`, in its
venv) on the same k-NN results. Every process runs with --threads OpenMP
threads (faiss's and BLAS's); each JSON names how many.

  python lab/benchmarks/mining_scale.py --rows 1000000 --rerank 16 0 \\
      --peer --stopes-python PEERS/stopes/bin/python --work /tmp/scale \\
      --output lab/results/mining_scale.peers-at-best-1e6.HW.json

--side-by-side: ours and the peer's runs at the same time, each on half of
the cores (on 2 cores, a core each and one thread each: the JSON names
the cores and threads), so that both meet the same machine:
  python lab/benchmarks/mining_scale.py --rows 10000000 --rerank 16 0 \\
      --peer --side-by-side --stopes-python PEERS/stopes/bin/python \\
      --work /tmp/scale \\
      --output lab/results/mining_ann.scale-1e7.amd-epyc-1core.json
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import threading
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


def _threads(args: argparse.Namespace) -> int:
  """Sets faiss's OpenMP threads to --threads; what faiss then reports."""
  import faiss  # pylint: disable=g-import-not-at-top
  faiss.omp_set_num_threads(args.threads)
  return faiss.omp_get_max_threads()


# How _peak_rss_bytes measures, kept in each result beside its peaks.
PEAK_MEASURE = "VmHWM"


def _peak_rss_bytes() -> int:
  """This process's peak resident memory since it started: VmHWM of
  /proc/self/status, the high-water mark of its own memory map. (On Linux
  ru_maxrss also counts the map of the process it was forked from, so a
  child's ru_maxrss is at least its parent's peak at the fork.) ru_maxrss
  where /proc has no VmHWM (macOS)."""
  try:
    with open("/proc/self/status", encoding="utf-8") as f:
      for line in f:
        if line.startswith("VmHWM:"):
          return 1024 * int(line.split()[1])
  except OSError:
    pass
  scale = 1 if sys.platform == "darwin" else 1024
  return scale * resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def mine_only(args: argparse.Namespace) -> None:
  """Loads and indexes the shards of args.work, then mines them once per
  --rerank value from the same indexes, into child.json: the fewest
  candidates first, so that each run's peak memory is its own or the
  smaller run's."""
  from paraflax.mining import index_build  # pylint: disable=g-import-not-at-top
  from paraflax.mining import pipeline  # pylint: disable=g-import-not-at-top
  from paraflax.mining import sides as sides_lib  # pylint: disable=g-import-not-at-top
  result = {"threads": _threads(args), "peak_rss_measure": PEAK_MEASURE}
  t = time.perf_counter()
  src, tgt = sides_lib.load_sides(
      [os.path.join(args.work, s, "part-*.f16") for s in "xy"], None, True,
      [None, None])
  result["load_s"] = time.perf_counter() - t
  folders = [os.path.join(args.work, f"index-{s}") for s in "xy"]
  gold = np.load(os.path.join(args.work, "gold.npy"))
  gold_n = int(np.count_nonzero(gold >= 0))
  for rerank in sorted(args.rerank):
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
           "peak_rss_bytes": _peak_rss_bytes(),
           "quality": quality(_read_tsv(out), gold, gold_n)}
    result.setdefault("runs", {})[str(rerank)] = run
  result["runs"] = {str(r): result["runs"][str(r)] for r in args.rerank}
  result["settings"] = _settings(args)
  with open(os.path.join(args.work, "child.json"), "w") as f:
    json.dump(result, f)


PEER_KINDS = {
    "index": "faiss directly: the index alone, its k best by the codes' "
             "scores; no re-ranking",
    "refine_flat": "faiss directly: IndexRefineFlat over the same index, "
                   "its {rerank} best scored again with exact inner "
                   "products of float32 rows held in memory",
    "refine_fp16": "faiss directly: IndexRefine over the same index with an "
                   "fp16 IndexScalarQuantizer, its {rerank} best scored "
                   "again from float16 rows held in memory",
}


def peer_variants(reranks: list[int]) -> list[str]:
  """The peer's runs for --rerank values, in the order they run:
  IndexRefineFlat for each R > 0 ('refine_flat-16'), 'index' for 0, then
  IndexRefine over float16 rows for each R > 0 ('refine_fp16-16')."""
  return ([f"refine_flat-{r}" for r in reranks if r]
          + ["index" for r in reranks if not r]
          + [f"refine_fp16-{r}" for r in reranks if r])


def _variant(name: str) -> tuple[str, int]:
  kind, _, rerank = name.partition("-")
  return kind, int(rerank or 0)


def _knn_folder(args: argparse.Namespace, variant: str) -> str:
  return os.path.join(args.work, f"peer-{variant}")


def peer_only(args: argparse.Namespace) -> dict:
  """faiss driven directly with the same string, sample and nprobe, as
  stopes does: each side's index trained, filled shard by shard from the
  float16 shards, searched a block of queries at a time, both ways; the
  --peer-variant's re-ranking; ratio margin and `max` by paraflax's code.
  Times, pairs, memory, and its k-NN results as stopes' files."""
  import faiss  # pylint: disable=g-import-not-at-top
  from paraflax.mining import index_spec  # pylint: disable=g-import-not-at-top
  from paraflax.mining import margin  # pylint: disable=g-import-not-at-top
  from paraflax.mining import sides as sides_lib  # pylint: disable=g-import-not-at-top
  kind, rerank = _variant(args.peer_variant)
  result = {"variant": args.peer_variant,
            "what": PEER_KINDS[kind].format(rerank=rerank),
            "rerank": rerank, "threads": _threads(args),
            "peak_rss_measure": PEAK_MEASURE}
  t = time.perf_counter()
  src, tgt = sides_lib.load_sides(
      [os.path.join(args.work, s, "part-*.f16") for s in "xy"], None, True,
      [None, None])
  result["load_s"] = time.perf_counter() - t
  spec = index_spec.Spec(args.index)
  ip = faiss.METRIC_INNER_PRODUCT
  found, build_s, search_s = [], 0.0, 0.0
  for queries, corpus in ((src.emb, tgt.emb), (tgt.emb, src.emb)):
    rows, dim = len(corpus), corpus.shape[1]
    t = time.perf_counter()
    base = faiss.index_factory(dim, args.index, ip)
    for part in (base, faiss.extract_index_ivf(base)):
      part = faiss.downcast_index(part)
      if hasattr(part, "do_polysemous_training"):
        part.do_polysemous_training = False
    exact = None
    if kind == "refine_flat":
      index = faiss.IndexRefineFlat(base)
    elif kind == "refine_fp16":
      exact = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16,
                                         ip)
      index = faiss.IndexRefine(base, exact)
    else:
      index = base
    sample = index_spec.default_sample(spec, dim, rows)
    picked = np.sort(np.random.default_rng(0).choice(
        rows, sample, replace=False))
    index.train(index_spec.unit(corpus[picked]))
    # As stopes does: the index filled shard by shard, searched a block of
    # queries at a time (faiss 1.15.1 given a side's 10^7 rows and queries
    # in one call each died here with a segmentation fault); each block
    # read from the float16 shards when it is needed.
    per = -(-rows // args.shards)
    for start in range(0, rows, per):
      index.add(index_spec.unit(corpus[start:start + per]))
    build_s += time.perf_counter() - t
    t = time.perf_counter()
    faiss.extract_index_ivf(base).nprobe = args.nprobe
    if rerank:
      index.k_factor = rerank / args.k
    blocks = [index.search(index_spec.unit(queries[s:s + args.block]), args.k)
              for s in range(0, len(queries), args.block)]
    found.append(tuple(np.concatenate(b) for b in zip(*blocks)))
    search_s += time.perf_counter() - t
    del index, base, exact
  t = time.perf_counter()
  pairs = margin.select(margin.from_neighbours(*found, margin="ratio"), "max")
  result.update({"index_build_s": build_s, "search_s": search_s,
                 "margin_s": time.perf_counter() - t,
                 "pairs": len(pairs.score)})
  result["peak_rss_bytes"] = _peak_rss_bytes()
  gold = np.load(os.path.join(args.work, "gold.npy"))
  result["quality"] = quality(pairs, gold, int(np.count_nonzero(gold >= 0)))
  result["total_mining_s"] = (result["load_s"] + build_s + search_s
                              + result["margin_s"])
  folder = _knn_folder(args, args.peer_variant)
  os.makedirs(folder, exist_ok=True)
  # Its pairs, for the shares against ours once both have mined (side by
  # side, ours may still be mining).
  np.save(os.path.join(folder, "pairs.npy"), _pair_keys(pairs, args.rows))
  # The k-NN results as stopes' calculate_distances leaves them: squared
  # L2 distances of unit rows (2 - 2 cos), the nearest first.
  t = time.perf_counter()
  for name, (sims, ids) in zip(("x2y", "y2x"), found):
    np.save(os.path.join(folder, f"{name}.dist.npy"),
            (2 - 2 * sims).astype(np.float32))
    np.save(os.path.join(folder, f"{name}.idx.npy"), ids.astype(np.uint32))
  result["knn_files_s"] = time.perf_counter() - t
  return result


def _pair_keys(pairs, rows: int) -> np.ndarray:
  return pairs.src.astype(np.int64) * rows + pairs.tgt


def shares(args: argparse.Namespace, variant: str) -> dict:
  """Of our pairs with the variant's re-ranking budget, the share the peer
  mined too, and of its pairs the share we found."""
  theirs = np.load(os.path.join(_knn_folder(args, variant), "pairs.npy"))
  ours = _pair_keys(_read_tsv(_tsv(args.work, _variant(variant)[1])),
                    args.rows)
  return {"share_of_our_pairs": float(np.isin(ours, theirs).mean()),
          "share_of_its_pairs_we_find": float(np.isin(theirs, ours).mean())}


def stopes_margin(args: argparse.Namespace, variant: str, gold: np.ndarray,
                  cores: list[int] | None) -> dict:
  """stopes' `mine` on the k-NN results of the peer's `variant`, in the
  venv of --stopes-python (`stopes_child.py`); its time, memory and the
  quality of its pairs, each pair once (stopes keeps a pair found both
  ways twice: the higher score is kept)."""
  from paraflax.mining import margin  # pylint: disable=g-import-not-at-top
  folder = _knn_folder(args, variant)
  proc = subprocess.run(
      [args.stopes_python, os.path.join(os.path.dirname(
          os.path.abspath(__file__)), "stopes_child.py"), folder,
       str(args.k)], env=_env(args), stdout=subprocess.PIPE,
      stderr=subprocess.PIPE, text=True, check=False,
      preexec_fn=_pinned(cores))
  lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
  if proc.returncode or not lines:
    tail = [l for l in proc.stderr.splitlines() if l.strip()][-1:]
    return {"ran": False, "why": f"stopes_child.py exit {proc.returncode}: "
                                 + (tail[0] if tail else "no output")}
  out = {"ran": True, **json.loads(lines[-1])}
  with np.load(os.path.join(folder, "stopes.npz")) as f:
    score, src, tgt = (f[n] for n in ("scores", "src_idx", "trg_idx"))
  src, tgt = src.astype(np.int64), tgt.astype(np.int64)
  order = np.lexsort((tgt, src, -score))
  _, first = np.unique((src * len(gold) + tgt)[order], return_index=True)
  keep = order[np.sort(first)]
  pairs = margin.Mined(src[keep], tgt[keep], score[keep].astype(np.float64))
  out["pairs"] = int(len(keep))
  out["quality"] = quality(pairs, gold, int(np.count_nonzero(gold >= 0)))
  return out


_CORPUS = ("rows", "dim", "shards", "clusters", "planted")


def _settings(args: argparse.Namespace, keys: tuple[str, ...] = (
    *_CORPUS, "index", "nprobe", "rerank", "k", "block", "threads")) -> dict:
  return {k: getattr(args, k) for k in keys}


def _env(args: argparse.Namespace) -> dict:
  """A child's environment: --threads OpenMP threads, as faiss's."""
  return {**os.environ, "OMP_NUM_THREADS": str(args.threads)}


def _pinned(cores: list[int] | None):
  """A child's preexec_fn that keeps it to `cores` (None: this process's)."""
  return None if cores is None else lambda: os.sched_setaffinity(0, cores)


def _child(args: argparse.Namespace, flags: list[str], name: str,
           cores: list[int] | None) -> dict:
  """The result of this script run with `flags` in a process of its own on
  `cores`, or the one a run of the same settings left in --work as
  `name`."""
  path = os.path.join(args.work, name)
  found = _read_json(path) if os.path.exists(path) else {}
  if found.get("settings") == _settings(args):
    return found
  if flags == ["--mine-only"]:  # what it measures starts from the shards
    for side in "xy":
      shutil.rmtree(os.path.join(args.work, f"index-{side}"),
                    ignore_errors=True)
  run_pinned([sys.executable, __file__, *sys.argv[1:], *flags,
             "--threads", str(args.threads)], _env(args), cores)
  return _read_json(path)


_RUNNING: set[subprocess.Popen] = set()  # the children now running
_FAILED = threading.Event()  # a child failed: start no other


def run_pinned(command: list[str], env: dict, cores: list[int] | None) -> None:
  """Runs `command` on `cores`; if it fails, the other side's running child
  is stopped too and no further one starts, so that a failed side-by-side
  run ends at once instead of after the other side's hour of mining."""
  if _FAILED.is_set():
    raise RuntimeError("not started: the other side's child failed")
  with subprocess.Popen(command, env=env, preexec_fn=_pinned(cores)) as proc:
    _RUNNING.add(proc)
    try:
      code = proc.wait()
    finally:
      _RUNNING.discard(proc)
  if code:
    _FAILED.set()
    for other in list(_RUNNING):
      other.terminate()
    raise subprocess.CalledProcessError(code, command)


def _read_json(path: str):
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def _summary(report: dict) -> list[str]:
  """A line per side: total, build, search (+ margin), peak memory, F1."""
  lines = []
  for rerank, run in report["runs"].items():
    lines.append(
        f"paraflax rerank {rerank}: total {run['total_mining_s']:.1f} s "
        f"(build {report['index_build_s']:.1f}, search + margin + TSV "
        f"{run['mine_s']:.1f}), peak {run['peak_rss_bytes'] / 2**20:,.0f} "
        f"MiB, F1 {run['quality']['f1_optimal']['f1']:.1f}")
  for variant, peer in report.get("peers", {}).items():
    line = (f"faiss {variant}: total {peer['total_mining_s']:.1f} s (build "
            f"{peer['index_build_s']:.1f}, search {peer['search_s']:.1f}, "
            f"margin {peer['margin_s']:.1f}), peak "
            f"{peer['peak_rss_bytes'] / 2**20:,.0f} MiB, F1 "
            f"{peer['quality']['f1_optimal']['f1']:.1f}")
    stopes = peer.get("stopes", {})
    if stopes.get("ran"):
      line += (f"; stopes' margin {stopes['mine_s']:.1f} s, peak "
               f"{stopes['peak_rss_mib']:,.0f} MiB, F1 "
               f"{stopes['quality']['f1_optimal']['f1']:.1f}")
    lines.append(line)
  return lines


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
  parser.add_argument("--threads", type=int,
                      help="OpenMP threads of every process, ours and the "
                      "peer's (default: the cores each may use)")
  parser.add_argument("--work", required=True)
  parser.add_argument("--output", required=True)
  parser.add_argument("--keep", action="store_true",
                      help="keep the shards and indexes")
  parser.add_argument("--mine-only", action="store_true",
                      help="(internal) mine the shards of --work")
  parser.add_argument("--peer-only", action="store_true",
                      help="(internal) the peer on the shards of --work")
  parser.add_argument("--peer-variant", default="index",
                      help="(internal) which of the peer's runs")
  parser.add_argument("--peer", action="store_true",
                      help="then faiss directly on the same shards (stopes' "
                      "recipe), with and without its own re-ranking, "
                      "reported beside ours")
  parser.add_argument("--stopes-python",
                      help="with --peer: the python of a venv with stopes "
                      "installed; the peer's margin then also by stopes' "
                      "own code")
  parser.add_argument("--stopes-missing",
                      help="with --peer and no --stopes-python: why stopes "
                      "is not run (the pip error line), kept in the JSON")
  parser.add_argument("--side-by-side", action="store_true",
                      help="with --peer: ours on the first half of this "
                      "process's cores and the peer's runs on the other "
                      "half, at the same time (needs 2 cores or more)")
  args = parser.parse_args()
  split = args.side_by_side and not (args.mine_only or args.peer_only)
  if split and not (args.peer and len(os.sched_getaffinity(0)) > 1):
    parser.error("--side-by-side needs --peer and 2 cores or more")
  halves = 2 if split else 1
  args.threads = args.threads or len(os.sched_getaffinity(0)) // halves
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  import children  # pylint: disable=g-import-not-at-top
  if args.mine_only:
    mine_only(args)
    return
  if args.peer_only:
    result = {**peer_only(args), "settings": _settings(args)}
    with open(os.path.join(args.work, f"peer-{args.peer_variant}.json"),
              "w") as f:
      json.dump(result, f)
    return
  facts = children.run_facts(__file__, None)
  corpus = _settings(args, _CORPUS)
  os.makedirs(args.work, exist_ok=True)
  done = os.path.join(args.work, "corpus.json")
  written = _read_json(done) if os.path.exists(done) else {}
  if written.get("corpus") == corpus:  # written by an earlier invocation
    write_s, rss_after_writing = written["write_shards_s"], None
  else:
    t = time.perf_counter()
    gold = write_corpus(args.work, args.rows, args.dim, args.shards,
                        args.clusters, args.planted, seed=0)
    write_s = time.perf_counter() - t
    rss_after_writing = _peak_rss_bytes()
    np.save(os.path.join(args.work, "gold.npy"), gold)
    del gold
    with open(done, "w") as f:  # last: a killed write is written again
      json.dump({"corpus": corpus, "write_shards_s": write_s}, f)
  gold_n = int(args.rows * args.planted)
  ours_cores, peer_cores = _cores(args)
  report = {
      **facts,
      "what": "synthetic clustered vectors with planted pairs, float16 "
              "shards, mined with paraflax's index path",
      "cores_used": f"{len(ours_cores or os.sched_getaffinity(0))} of "
                    f"{os.cpu_count()}",
      "side_by_side": ours_cores and {
          "how": "ours and the peer's runs (one after another) at the same "
                 "time, each process kept to its own cores",
          "ours_cores": ours_cores, "peer_cores": peer_cores},
      "rows_per_side": args.rows, "dim": args.dim, "shards": args.shards,
      "clusters": args.clusters, "planted_pairs": gold_n,
      "index": args.index, "nprobe": args.nprobe, "rerank": args.rerank[0],
      "k": args.k, "block": args.block, "margin": "ratio", "retrieval": "max",
      "threads": args.threads,
      "shard_bytes_per_side": args.rows * args.dim * 2,
      "generator_peak_rss_bytes": rss_after_writing,
      "write_shards_s": write_s}
  peers: dict[str, str] = {}  # the peers' versions
  os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)

  def save() -> None:
    """The report so far, written whole and recorded: a run stopped
    part-way leaves a file of the sides it finished."""
    if "runs" in report:
      for rerank, run in report["runs"].items():
        same = report.get("peers", {}).get(_same_budget(rerank))
        if same and run.get("peer_variant") != same["variant"]:
          # Once per run: the shares read both sides' pairs whole.
          run.update(peer_variant=same["variant"],
                     **shares(args, same["variant"]),
                     peer_over_ours_time=(same["total_mining_s"]
                                          / run["total_mining_s"]))
    # "peer": the key of the files before faiss's re-ranking was run.
    if "index" in report.get("peers", {}):
      report["peer"] = report["peers"]["index"]
    children.write_result(args.output, report, peers=peers)

  def mine_ours() -> None:
    # The mining runs in its own process, so that its peak RSS is its own;
    # a rerun with --keep reuses a finished mining of the same settings.
    mined = _child(args, ["--mine-only"], "child.json", ours_cores)
    del mined["settings"]
    for run in mined["runs"].values():
      run["total_mining_s"] = (mined["load_s"] + mined["index_build_s"]
                               + run["mine_s"])
    report.update(mined)

  def mine_peers(on_each) -> None:
    gold = np.load(os.path.join(args.work, "gold.npy"))
    report["peers"] = {}
    for variant in peer_variants(args.rerank):
      peer = _child(args, ["--peer-only", "--peer-variant", variant],
                    f"peer-{variant}.json", peer_cores)
      del peer["settings"]
      peer["stopes"] = _stopes(args, variant, gold, peer, peer_cores)
      if peer["stopes"]["ran"]:
        peers["stopes"] = peer["stopes"]["versions"]["stopes"]
      report["peers"][variant] = peer
      on_each()

  if ours_cores:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
      peer_run = pool.submit(mine_peers, lambda: None)
      mine_ours()
      peer_run.result()
  else:
    mine_ours()
    save()
    if args.peer:
      mine_peers(save)
  save()
  print("\n".join(_summary(report)))
  if not args.keep:
    shutil.rmtree(args.work)


def _same_budget(rerank: str) -> str:
  """The peer's variant that re-ranks as many candidates as our run."""
  return "index" if rerank == "0" else f"refine_flat-{rerank}"


def _cores(args: argparse.Namespace) -> tuple[list[int] | None, ...]:
  """With --side-by-side, the first half of this process's cores for our
  mining and the other half for the peer's; else None, None."""
  if not args.side_by_side:
    return None, None
  cores = sorted(os.sched_getaffinity(0))
  return cores[:len(cores) // 2], cores[len(cores) // 2:]


def _stopes(args: argparse.Namespace, variant: str, gold: np.ndarray,
            peer: dict, cores: list[int] | None) -> dict:
  """stopes' margin on the variant's k-NN results with its whole time, or
  why it did not run."""
  if not args.stopes_python:
    return {"ran": False,
            "why": args.stopes_missing or "no --stopes-python given"}
  out = stopes_margin(args, variant, gold, cores)
  if out["ran"]:
    out["total_mining_s"] = (peer["load_s"] + peer["index_build_s"]
                             + peer["search_s"] + peer["knn_files_s"]
                             + out["mine_s"])
  return out


if __name__ == "__main__":
  main()
