r"""End-to-end margin mining time: ours (jax) against faiss + numpy, with the
bare matrix-product time as a roofline.

One mining run is N x N: k-NN both ways (k = 4, cosine), ratio margin
scores, `max` retrieval. Methods, each size of each in its own child process:
  ours           `knn.both_ways` (one product for both directions, the
                 column top-k merged on the device), `margin.from_neighbours`,
                 `select` max,
                 on each of `--devices` simulated CPU devices;
  faiss          what a LASER user writes: `faiss.normalize_L2`, exact
                 `IndexFlatIP` search both ways, margin and max in numpy;
  sentence_transformers
                 what a sentence-transformers user writes on --platform's
                 device (torch): the embeddings normalised once,
                 `util.semantic_search` both ways (exact, dot product,
                 float32) at each query chunk of --peer-chunks, the margin
                 and max of the faiss row; the fastest chunk is the row's
                 time. On a GPU this is the peer on the same device where
                 faiss-gpu does not install; its child runs under
                 --peer-python, and by default only where that python
                 imports sentence_transformers;
  roofline_jax   the one N x N x d product alone, as [block, d] x [d, block]
                 tiles with the `einsum` of `knn` (1 device);
  roofline_blas  the same tiles through numpy's BLAS (`np.matmul`).
The roofline is the faster of the two: a lower bound for any exact method.

Command (writes lab/results/mining_throughput.json by children.write_result
after every child, with the run's facts and faiss's version as the peer's):
  .venv/bin/python lab/benchmarks/mining_throughput.py \
      --sizes 10000 50000 100000 --dim 512 --devices 1 8

The parent never imports jax: each child gets its device count through
XLA_FLAGS, which jax reads once, when it starts. Each child prints one JSON
line on stdout and saves its mined pairs, which the parent compares.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# The peer's python (--peer-python) has paraflax on no path of its own.
sys.path.append(_REPO)
import children  # pylint: disable=g-import-not-at-top,wrong-import-position
_DEFAULT_OUTPUT = os.path.join(_REPO, "lab", "results",
                               "mining_throughput.json")
METHODS = ("ours", "faiss", "sentence_transformers", "roofline_jax",
           "roofline_blas")
_PEERS = ("faiss", "sentence_transformers")  # the first run is the reference
_ROOFLINES = ("roofline_jax", "roofline_blas")
# On --platform's devices; the others on the CPU.
_ON_DEVICE = ("ours", "roofline_jax", "sentence_transformers")
_MARGIN, _RETRIEVAL = "ratio", "max"
_EMBEDDINGS = "random normal, seed 0"

Result = dict[str, Any]


def _parse(argv: list[str] | None) -> argparse.Namespace:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--sizes", type=int, nargs="+",
                      default=[10_000, 50_000, 100_000],
                      help="N: rows on each side, mined N x N")
  parser.add_argument("--dim", type=int, default=512)
  parser.add_argument("--k", type=int, default=4)
  parser.add_argument("--devices", type=int, nargs="+", default=[1, 8],
                      help="device counts for ours (simulated on the CPU)")
  parser.add_argument("--platform", default="cpu",
                      help="jax platform of ours and roofline_jax: cpu "
                      "(simulated devices), or cuda / tpu (the real ones, "
                      "--devices of them); sentence_transformers runs on "
                      "the same device (torch's cuda for cuda); faiss and "
                      "BLAS stay on the CPU")
  parser.add_argument("--methods", nargs="+", choices=METHODS,
                      help="default: all, sentence_transformers where "
                      "--peer-python imports it")
  parser.add_argument("--peer-python", default=sys.executable,
                      help="the python of the sentence_transformers child "
                      "(torch and sentence-transformers installed)")
  parser.add_argument("--peer-chunks", type=int, nargs="+",
                      default=[100, 1_000, 10_000],
                      help="semantic_search query_chunk_size values tried "
                      "(100 is the library's default)")
  parser.add_argument("--block", type=int, default=None,
                      help="k-NN and roofline tile rows (default: knn.knn's)")
  parser.add_argument("--max-seconds", type=float, default=1800,
                      help="a child running longer is stopped, and larger "
                      "sizes of its method are skipped")
  parser.add_argument("--xla-ops", action="store_true",
                      help="our top-k by XLA's ops: the native kernel is not "
                      "built (PARAFLAX_NATIVE_CACHE=off for every child)")
  parser.add_argument("--output", default=_DEFAULT_OUTPUT)
  parser.add_argument("--child", choices=METHODS, help=argparse.SUPPRESS)
  parser.add_argument("--child-size", type=int, help=argparse.SUPPRESS)
  parser.add_argument("--child-devices", type=int, help=argparse.SUPPRESS)
  parser.add_argument("--child-pairs", help=argparse.SUPPRESS)
  args = parser.parse_args(argv)
  if not args.child:
    args.methods = _methods(parser, args.methods, args.peer_python)
  return args


def _methods(parser: argparse.ArgumentParser, given: list[str] | None,
             python: str) -> list[str]:
  """The methods to run: --methods, else METHODS without
  sentence_transformers where `python` cannot import it (each of its rows
  would fail); --methods that names it then stops here, before any work."""
  wanted = list(given or METHODS)
  if "sentence_transformers" not in wanted or subprocess.run(
      [python, "-c", "import sentence_transformers"], capture_output=True,
      check=False).returncode == 0:
    return wanted
  if given:
    parser.error(f"--methods sentence_transformers: {python} cannot import "
                 "sentence_transformers; give --peer-python a python with "
                 "torch and sentence-transformers installed")
  print(f"mining_throughput: sentence_transformers left out ({python} cannot "
        "import it; --peer-python names one that can)", file=sys.stderr)
  return [m for m in wanted if m != "sentence_transformers"]


# ---------------------------------------------------------------- child ----


def _embeddings(n: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
  # Exact search does the same work whatever the content.
  rng = np.random.default_rng(0)
  return (rng.standard_normal((n, dim), dtype=np.float32),
          rng.standard_normal((n, dim), dtype=np.float32))


def _tiles(x: np.ndarray, block: int) -> list[np.ndarray]:
  """Row blocks of at most `block`, balanced as `knn` balances the corpus, so
  there are at most two tile shapes and no padding."""
  size = math.ceil(len(x) / math.ceil(len(x) / block))
  return [x[start:start + size] for start in range(0, len(x), size)]


def _ours(x: np.ndarray, y: np.ndarray, k: int, block: int,
          num_devices: int) -> tuple[Result, np.ndarray]:
  # Imported here so that only this child, with XLA_FLAGS set, starts jax.
  import jax  # pylint: disable=g-import-not-at-top
  from paraflax.mining import knn, margin, native  # pylint: disable=g-import-not-at-top
  from paraflax.training import partitioning  # pylint: disable=g-import-not-at-top

  mesh = partitioning.make_mesh(num_devices)
  # A full query block, and a last one as short as the timed run's (padded
  # to its own, smaller shape), against the whole corpus: the shapes of the
  # timed run. The second call finds the searches compiled, so first -
  # second is the compile time.
  shapes = x[:block + len(x) % block]
  warmup = []
  for _ in range(2):
    start = time.perf_counter()
    list(knn.both_ways_blocks(shapes, y, k, block=block, mesh=mesh))
    warmup.append(time.perf_counter() - start)
  # knn_fwd_s: the one pass that finds both directions, the y rows' top-k
  # merged on the device as it goes; knn_bwd_s: 0, no host merge is left
  # (results of before hold the host's merge there).
  times = [time.perf_counter()]
  fwd, bwd = knn.both_ways(x, y, k, block=block, mesh=mesh)
  times += [time.perf_counter()] * 2
  pairs = margin.select(margin.from_neighbours(fwd, bwd, margin=_MARGIN),
                        _RETRIEVAL)
  times.append(time.perf_counter())
  # The device's peak, where it keeps one (GPUs, TPUs; not the CPU).
  peak = (mesh.devices.flat[0].memory_stats() or {}).get("peak_bytes_in_use")
  return {"devices": mesh.size, "warmup_s": warmup,
          "compile_s": warmup[0] - warmup[1],
          **_phases(times), "jax": jax.__version__,
          "device_peak_mib": None if peak is None else peak / 2**20,
          # The tiles' top-k by our kernel, or by XLA's ops where it is not
          # built (PARAFLAX_NATIVE_CACHE=off); a first build is in compile_s.
          "native_kernel": native.available(),
          "device_kind": mesh.devices.flat[0].device_kind}, np.stack(
              [pairs.src, pairs.tgt], axis=1)


def _phases(times: list[float]) -> Result:
  fwd, bwd, score = np.diff(times).tolist()
  return {"knn_fwd_s": fwd, "knn_bwd_s": bwd, "score_s": score,
          "total_s": times[-1] - times[0]}


def _margin_max(fwd: tuple[np.ndarray, np.ndarray],
                bwd: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
  """The peer's own ratio margin and `max` retrieval, as LASER's mine.py
  writes them: [pairs, 2] (src, tgt) by descending score."""
  (fwd_sim, fwd_ind), (bwd_sim, bwd_ind) = fwd, bwd
  fwd_mean, bwd_mean = fwd_sim.mean(axis=1), bwd_sim.mean(axis=1)
  fwd_score = fwd_sim / ((fwd_mean[:, None] + bwd_mean[fwd_ind]) / 2)
  bwd_score = bwd_sim / ((bwd_mean[:, None] + fwd_mean[bwd_ind]) / 2)
  x_rows, y_rows = np.arange(len(fwd_ind)), np.arange(len(bwd_ind))
  src = np.concatenate([x_rows, bwd_ind[y_rows, bwd_score.argmax(axis=1)]])
  tgt = np.concatenate([fwd_ind[x_rows, fwd_score.argmax(axis=1)], y_rows])
  score = np.concatenate([fwd_score.max(axis=1), bwd_score.max(axis=1)])
  seen_src, seen_tgt, kept = set(), set(), []
  for i in np.argsort(-score, kind="stable").tolist():
    s, t = int(src[i]), int(tgt[i])
    if s not in seen_src and t not in seen_tgt:
      seen_src.add(s)
      seen_tgt.add(t)
      kept.append((s, t))
  return np.asarray(kept, np.int64).reshape(-1, 2)


def _faiss(x: np.ndarray, y: np.ndarray, k: int) -> tuple[Result, np.ndarray]:
  import faiss  # pylint: disable=g-import-not-at-top

  def search(queries: np.ndarray, corpus: np.ndarray):
    index = faiss.IndexFlatIP(corpus.shape[1])
    index.add(corpus)
    return index.search(queries, k)

  times = [time.perf_counter()]
  faiss.normalize_L2(x)  # in place, as LASER
  faiss.normalize_L2(y)
  fwd = search(x, y)
  times.append(time.perf_counter())
  bwd = search(y, x)
  times.append(time.perf_counter())
  pairs = _margin_max(fwd, bwd)
  times.append(time.perf_counter())
  return {"devices": 1, "compile_s": 0.0, **_phases(times),
          "faiss": faiss.__version__,
          "omp_threads": faiss.omp_get_max_threads()}, pairs


def _sentence_transformers(x: np.ndarray, y: np.ndarray, k: int,
                           platform: str, chunks: list[int]
                           ) -> tuple[Result, np.ndarray]:
  import sentence_transformers  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  from sentence_transformers import util  # pylint: disable=g-import-not-at-top
  device = "cpu" if platform == "cpu" else "cuda"

  def search(queries, corpus, chunk: int):
    hits = util.semantic_search(queries, corpus, query_chunk_size=chunk,
                                top_k=k, score_function=util.dot_score)
    return (np.array([[h["score"] for h in row] for row in hits], np.float32),
            np.array([[h["corpus_id"] for h in row] for row in hits],
                     np.int64))

  def mine(chunk: int) -> tuple[Result, np.ndarray]:
    times = [time.perf_counter()]
    xt, yt = (torch.nn.functional.normalize(torch.from_numpy(a).to(device),
                                            dim=1) for a in (x, y))
    fwd = search(xt, yt, chunk)
    times.append(time.perf_counter())
    bwd = search(yt, xt, chunk)
    times.append(time.perf_counter())
    pairs = _margin_max(fwd, bwd)
    times.append(time.perf_counter())
    return _phases(times), pairs

  # The first call starts CUDA and cuBLAS (or torch's threads): untimed.
  start = time.perf_counter()
  mine(max(chunks))
  warmup = time.perf_counter() - start
  if device == "cuda":
    torch.cuda.reset_peak_memory_stats()
  runs = {chunk: mine(chunk) for chunk in chunks}
  best = min(runs, key=lambda c: runs[c][0]["total_s"])
  return {"devices": 1, "warmup_s": warmup, "compile_s": 0.0,
          **runs[best][0], "query_chunk_size": best,
          "chunk_total_s": {str(c): r[0]["total_s"] for c, r in runs.items()},
          "device_peak_mib": (torch.cuda.max_memory_allocated() / 2**20
                              if device == "cuda" else None),
          "tf32": torch.backends.cuda.matmul.allow_tf32,
          "sentence_transformers": sentence_transformers.__version__,
          "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
          "device_kind": (torch.cuda.get_device_name() if device == "cuda"
                          else "cpu")}, runs[best][1]


def _roofline(x: np.ndarray, y: np.ndarray, block: int, backend: str
              ) -> Result:
  """The N x N x d product, tile by tile, each tile waited for."""
  if backend == "jax":
    import jax  # pylint: disable=g-import-not-at-top
    import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
    # The product `knn` computes, at its precision, on inputs already placed.
    dot = jax.jit(lambda q, c: jnp.einsum("qd,cd->qc", q, c,
                                          precision=jax.lax.Precision.HIGHEST))
    x_tiles, y_tiles = ([jax.device_put(t) for t in _tiles(a, block)]
                        for a in (x, y))

    def product(q, c):
      return dot(q, c).block_until_ready()
    versions = {"jax": jax.__version__,
                "device_kind": jax.devices()[0].device_kind}
  else:
    x_tiles, y_tiles = _tiles(x, block), _tiles(y, block)
    outs = {}  # one output buffer per tile shape: no allocation when timed

    def product(q, c):
      out = outs.setdefault((len(q), len(c)),
                            np.empty((len(q), len(c)), np.float32))
      return np.matmul(q, c.T, out=out)
    versions = {"numpy": np.__version__}

  # Each tile shape once, untimed: jax compiles, BLAS warms its threads.
  start = time.perf_counter()
  for q in {len(t): t for t in x_tiles}.values():
    for c in {len(t): t for t in y_tiles}.values():
      product(q, c)
  warmup = time.perf_counter() - start
  start = time.perf_counter()
  for q in x_tiles:
    for c in y_tiles:
      product(q, c)
  return {"devices": 1, "warmup_s": warmup, "compile_s": None,
          "total_s": time.perf_counter() - start,
          "tile_rows": max(len(t) for t in x_tiles), **versions}


def _measure(args: argparse.Namespace) -> Result:
  """One method at one size; its mined pairs go to --child-pairs."""
  # As `paraflax mine` does, for every method alike (before jax starts).
  from paraflax import host  # pylint: disable=g-import-not-at-top
  kept = host.keep_freed_memory()
  x, y = _embeddings(args.child_size, args.dim)
  inputs_rss = children.peak_rss_mib()
  pairs = None
  if args.child == "ours":
    result, pairs = _ours(x, y, args.k, args.block, args.child_devices)
  elif args.child == "faiss":
    result, pairs = _faiss(x, y, args.k)
  elif args.child == "sentence_transformers":
    result, pairs = _sentence_transformers(x, y, args.k, args.platform,
                                           args.peer_chunks)
  else:
    result = _roofline(x, y, args.block, args.child.split("_")[1])
  if pairs is not None:
    np.save(args.child_pairs, pairs)
  return {"method": args.child, "n": args.child_size, "status": "ok",
          "keep_freed_memory": kept, **result, "pairs": None if pairs is None else len(pairs),
          # The peers multiply twice (once per direction), the others once.
          "gflop_per_s": (4 if args.child in _PEERS else 2)
                         * args.child_size**2 * args.dim
                         / result["total_s"] / 1e9,
          "inputs_rss_mib": inputs_rss, "peak_rss_mib": children.peak_rss_mib()}


# --------------------------------------------------------------- parent ----


def _library_block() -> int:
  """`knn.knn`'s default block, read in a child: importing knn starts jax."""
  code = ("import inspect; from paraflax.mining import knn; "
          "print(inspect.signature(knn.knn).parameters['block'].default)")
  out = subprocess.run([sys.executable, "-c", code], env=children.child_env(1),
                       stdout=subprocess.PIPE, text=True, check=True).stdout
  return int(out.split()[-1])


def _run_child(args: argparse.Namespace, method: str, devices: int, n: int,
               pairs_path: str) -> Result:
  cmd = [os.path.abspath(__file__), "--child", method,
         "--child-size", str(n), "--child-devices", str(devices),
         "--child-pairs", pairs_path, "--dim", str(args.dim),
         "--k", str(args.k), "--block", str(args.block),
         "--platform", args.platform,
         "--peer-chunks", *map(str, args.peer_chunks)]
  row = {"method": method, "devices": devices, "n": n}
  try:
    return children.run_child(
        cmd, devices, timeout=args.max_seconds,
        platform=args.platform if method in _ON_DEVICE else "cpu",
        python=(args.peer_python if method == "sentence_transformers"
                else sys.executable))
  except subprocess.TimeoutExpired:
    return {**row, "status": "timeout",
            "reason": f"stopped after --max-seconds {args.max_seconds:g}"}
  except children.ChildFailed as e:
    # Out of memory, most likely; its stderr is above.
    return {**row, "status": "failed", "reason": str(e)}


def _agreement(rows: list[Result], pair_files: dict[tuple[str, int], str]
               ) -> None:
  """Each ours row of one size against the first peer of _PEERS that ran:
  not asserted, as equal similarities may be ordered differently."""
  peer_file = next((pair_files[(p, 1)] for p in _PEERS if (p, 1) in pair_files
                    and os.path.exists(pair_files[(p, 1)])), None)
  if peer_file is None:
    return
  theirs = np.load(peer_file)
  for row in rows:
    if row["method"] != "ours" or row["status"] != "ok":
      continue
    ours = np.load(pair_files[(row["method"], row["devices"])])
    # Each source is used once under `max`: (src, tgt) codes are unique.
    same = np.intersect1d(ours[:, 0] * row["n"] + ours[:, 1],
                          theirs[:, 0] * row["n"] + theirs[:, 1]).size
    row.update(same_pairs_peer=os.path.basename(peer_file).split("-")[0],
               peer_pairs=len(theirs), same_pairs=int(same),
               same_pairs_fraction=same / max(len(ours), len(theirs), 1))


def _ratios(rows: list[Result]) -> None:
  """Each ours row over each peer, and each row over the roofline, of its
  size."""
  ok = [r for r in rows if r["status"] == "ok"]
  peers = {r["method"]: r["total_s"] for r in ok if r["method"] in _PEERS}
  roofs = [r for r in ok if r["method"] in _ROOFLINES]
  roof = min(roofs, key=lambda r: r["total_s"], default=None)
  for r in ok:
    if r["method"] == "ours":
      r.update({f"ours_over_{p}": r["total_s"] / s for p, s in peers.items()})
    if roof is not None:
      r.update(roofline=roof["method"], roofline_s=roof["total_s"],
               over_roofline=r["total_s"] / roof["total_s"])


def _growth(results: list[Result]) -> None:
  """Time and peak RSS of each size over the previous size, per method."""
  last: dict[tuple[str, int], Result] = {}
  for r in results:
    key = (r["method"], r["devices"])
    prev = last.get(key)
    if r["status"] == "ok" and prev is not None:
      r.update(n_growth=r["n"] / prev["n"],
               time_growth=r["total_s"] / prev["total_s"],
               rss_growth=r["peak_rss_mib"] / prev["peak_rss_mib"])
    if r["status"] == "ok":
      last[key] = r


def _fmt(value: Any, spec: str) -> str:
  return "-" if value is None else format(value, spec)


def _over_peer(row: Result) -> float | None:
  return next((row[f"ours_over_{p}"] for p in _PEERS
               if f"ours_over_{p}" in row), None)


def _table(results: list[Result]) -> str:
  head = (f"{'method':<13} {'dev':>3} {'N':>7} {'total s':>8} {'knn s':>8} "
          f"{'score s':>7} {'compile s':>9} {'RSS MiB':>7} {'/peer':>6} "
          f"{'/roof':>6} {'same pairs':>10} {'N^2 x':>5} {'t x':>6} "
          f"{'RSS x':>5}")
  rows = [head]
  for r in results:
    if r["status"] != "ok":
      rows.append(f"{r['method']:<13} {r['devices']:>3} {r['n']:>7} "
                  f"{r['status']}: {r['reason']}")
      continue
    knn_s = (r["knn_fwd_s"] + r["knn_bwd_s"]) if "knn_fwd_s" in r else None
    n_sq = r["n_growth"]**2 if "n_growth" in r else None
    rows.append(
        f"{r['method']:<13} {r['devices']:>3} {r['n']:>7} "
        f"{r['total_s']:>8.2f} {_fmt(knn_s, '8.2f'):>8} "
        f"{_fmt(r.get('score_s'), '7.2f'):>7} "
        f"{_fmt(r.get('compile_s'), '9.2f'):>9} {r['peak_rss_mib']:>7.0f} "
        f"{_fmt(_over_peer(r), '6.2f'):>6} "
        f"{_fmt(r.get('over_roofline'), '6.2f'):>6} "
        f"{_fmt(r.get('same_pairs_fraction'), '10.4f'):>10} "
        f"{_fmt(n_sq, '5.0f'):>5} {_fmt(r.get('time_growth'), '6.2f'):>6} "
        f"{_fmt(r.get('rss_growth'), '5.2f'):>5}")
  rows.append("/peer, /roof: total time over the first peer's of "
              f"{', '.join(_PEERS)} and over the faster roofline at that N; "
              "same pairs: ours vs that peer; x: over the previous N.")
  return "\n".join(rows)


def _plan(args: argparse.Namespace) -> list[tuple[str, int]]:
  """(method, devices) per child at each size; only ours uses --devices."""
  return [(m, d) for m in args.methods
          for d in (args.devices if m == "ours" else [1])]


def main(argv: list[str] | None = None) -> None:
  args = _parse(argv)
  if args.child:
    print(json.dumps(_measure(args)), flush=True)
    return
  if args.xla_ops:  # the children inherit it (children.child_env)
    os.environ["PARAFLAX_NATIVE_CACHE"] = "off"
  if args.block is None:
    args.block = _library_block()
  report = {
      **children.run_facts(__file__, argv),
      "benchmark": "mining_throughput",
      "embeddings": _EMBEDDINGS, "dim": args.dim, "k": args.k,
      "margin": _MARGIN, "retrieval": _RETRIEVAL, "block": args.block,
      "max_seconds": args.max_seconds, "jax_platform": args.platform,
      "roofline": "the one N x N x d float32 product as [block, d] x "
                  "[d, block] tiles, each waited for: jax einsum (1 device) "
                  "and numpy matmul (BLAS); the faster is the roofline",
      "results": []}
  peers = children.versions(("faiss-cpu",))
  results = report["results"]
  stopped: dict[tuple[str, int], str] = {}
  with tempfile.TemporaryDirectory() as tmp:
    for n in sorted(args.sizes):
      rows, pair_files = [], {}
      for method, devices in _plan(args):
        if (method, devices) in stopped:
          rows.append({"method": method, "devices": devices, "n": n,
                       "status": "skipped",
                       "reason": stopped[(method, devices)]})
          continue
        pair_files[(method, devices)] = os.path.join(
            tmp, f"{method}-{devices}-{n}.npy")
        row = _run_child(args, method, devices, n,
                         pair_files[(method, devices)])
        if row["status"] != "ok":
          stopped[(method, devices)] = f"N={n} {row['status']}"
        print(f"{method} {devices} dev N={n}: {row['status']} "
              f"{row.get('total_s', 0):.2f} s", file=sys.stderr, flush=True)
        rows.append(row)
        if method == "sentence_transformers" and row["status"] == "ok":
          peers.update({"sentence-transformers": row["sentence_transformers"],
                        "torch": row["torch"]})
        # After every child: a run stopped later keeps what it measured
        # (the comparisons come once its size is done).
        children.write_result(args.output,
                              {**report, "results": results + rows},
                              peers=peers)
      _agreement(rows, pair_files)
      _ratios(rows)
      results += rows
      _growth(results)
      # Others' jobs share the cores: the load at the end shows in "run".
      children.write_result(args.output, report, peers=peers)
  print(_table(results))
  print(f"wrote {args.output}")


if __name__ == "__main__":
  main()
