"""Approximate mining (`paraflax mine --index`) against exact search, and
faiss driven directly with the same index settings as the peer.

Two parts, one JSON:

* recall: synthetic clustered unit vectors (a random centre plus noise per
  row; a tenth of the target rows a noisy copy of a source row), N per
  side, float16 shards. For each index setting: build time of both
  sides' indexes, bytes per indexed row, search time both ways,
  recall@k of each direction against the exact jax search, and the mined
  pairs shared with exact mining (ratio margin, `max`). The peer does
  what stopes does with faiss: train the same factory string on the same
  sample, add, search both ways, margin and `max` in numpy; its time is
  reported beside ours, as a ratio.
* quality: the news benchmarks of `paraflax mining-set` (dev and test,
  1,000 gold pairs among 5,000 sentences a side), embedded by hashed
  character 3-5-grams (no trained encoder is assumed: the figures compare
  searches, not encoders); P/R/F1 at the dev-optimal threshold for exact
  search and each index setting.

  python lab/benchmarks/mining_ann.py --skip-quality --rows 20000 \\
      --output lab/results/mining_ann.recall.HW.json
  python lab/benchmarks/mining_ann.py --skip-recall \\
      --output lab/results/mining_ann.quality.HW.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import zlib
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import children  # pylint: disable=g-import-not-at-top,wrong-import-position
import mining_scale  # pylint: disable=g-import-not-at-top,wrong-import-position

QUALITY_SETTINGS = [  # (factory string with {nlist}, nprobe) at nlist 64
    ("IVF{nlist},Flat", 8), ("IVF{nlist},Flat", 16), ("IVF{nlist},Flat", 32),
    ("IVF{nlist},PQ16", 32), ("IVF{nlist}_HNSW32,PQ16x4fs", 16),
    ("IVF{nlist}_HNSW32,PQ16x4fs", 32)]
SETTINGS = [  # (factory string with {nlist}, nprobe)
    ("IVF{nlist},Flat", 8), ("IVF{nlist},SQ8", 8), ("IVF{nlist},PQ16", 8),
    ("IVF{nlist},PQ16", 32), ("IVF{nlist}_HNSW32,PQ16x4fs", 8),
    ("OPQ16,IVF{nlist},PQ16", 8)]


def recall(found: np.ndarray, exact: np.ndarray) -> float:
  return float(np.mean([len(set(a) & set(b)) / len(b)
                        for a, b in zip(found.tolist(), exact.tolist())]))


def _pairs(path: str) -> set[tuple[str, str]]:
  with open(path, encoding="utf-8") as f:
    return {tuple(line.rstrip("\n").split("\t")[1:]) for line in f}


def peer(x: np.ndarray, y: np.ndarray, factory: str, nprobe: int, k: int,
         sample: int, seed: int) -> tuple[float, set]:
  """faiss directly, as stopes: train, add, search both ways, ratio
  margin and max retrieval in numpy. (seconds, pairs)."""
  import faiss  # pylint: disable=g-import-not-at-top
  from paraflax.mining import index_spec  # pylint: disable=g-import-not-at-top
  from paraflax.mining import margin  # pylint: disable=g-import-not-at-top
  start = time.perf_counter()
  xu, yu = index_spec.unit(x), index_spec.unit(y)
  found = []
  for queries, corpus in ((xu, yu), (yu, xu)):
    index = faiss.index_factory(corpus.shape[1], factory,
                                faiss.METRIC_INNER_PRODUCT)
    for part in (index, faiss.extract_index_ivf(index)):
      part = faiss.downcast_index(part)
      if hasattr(part, "do_polysemous_training"):
        part.do_polysemous_training = False
    picked = np.sort(np.random.default_rng(seed).choice(
        len(corpus), min(sample, len(corpus)), replace=False))
    index.train(corpus[picked])
    index.add(corpus)
    faiss.extract_index_ivf(index).nprobe = nprobe
    sims, idx = index.search(queries, k)
    found.append((sims, idx))
  pairs = margin.select(margin.from_neighbours(*found), "max")
  seconds = time.perf_counter() - start
  return seconds, {(str(a), str(b)) for a, b in zip(pairs.src, pairs.tgt)}


def recall_part(args, work: str, rows: list[dict],
                save: Callable[[], None]) -> None:
  """Appends a row per index setting to `rows`, calling `save` after each:
  a long run stopped part-way keeps the settings it finished."""
  from paraflax.mining import index_build  # pylint: disable=g-import-not-at-top
  from paraflax.mining import index_search  # pylint: disable=g-import-not-at-top
  from paraflax.mining import knn  # pylint: disable=g-import-not-at-top
  from paraflax.mining import pipeline  # pylint: disable=g-import-not-at-top
  from paraflax.mining import sides as sides_lib  # pylint: disable=g-import-not-at-top
  mining_scale.write_corpus(work, args.rows, args.dim, 4, args.clusters,
                            0.1, seed=0)
  src, tgt = sides_lib.load_sides(
      [os.path.join(work, s, "part-*.f16") for s in "xy"], None, True,
      [None, None])
  x, y = np.asarray(src.emb), np.asarray(tgt.emb)
  start = time.perf_counter()
  (fwd, bwd) = knn.both_ways(x, y, args.k)
  exact_s = time.perf_counter() - start
  exact_out = os.path.join(work, "exact.tsv")
  pipeline.mine(src, tgt, pipeline.Options(k=args.k), exact_out)
  exact_pairs = _pairs(exact_out)
  rows.append({"setting": "exact (jax)", "nprobe": None, "search_s": exact_s,
               "recall_fwd": 1.0, "recall_bwd": 1.0, "same_pairs": 1.0})
  save()
  for n, (factory, nprobe) in enumerate(SETTINGS):
    factory = factory.format(nlist=args.nlist)
    options = pipeline.Options(k=args.k, index=factory, nprobe=nprobe,
                               rerank=args.rerank, block=8192)
    folders = [os.path.join(work, f"i{n}-{s}") for s in "xy"]
    start = time.perf_counter()
    for side, folder in zip((src, tgt), folders):
      index_build.build(folder, side.emb, options.spec,
                        shard_prints=side.shard_prints, progress=False)
    build_s = time.perf_counter() - start
    views = [index_search.Rows(s.emb, None) for s in (src, tgt)]
    found, search_s = [], 0.0
    for q, c in ((0, 1), (1, 0)):
      index = index_search.load(folders[c], nprobe)
      start = time.perf_counter()
      found.append(np.concatenate([idx for _, _, idx in index_search.search_blocks(
          index, "ip", views[q], views[c], args.k, rerank=args.rerank,
          block=8192, todo=range(knn.num_blocks(len(views[q]), 8192)),
          name="x")]))
      search_s += time.perf_counter() - start
    out = os.path.join(work, f"i{n}.tsv")
    pipeline.mine(src, tgt, options, out, index_folders=folders)
    ours_pairs = _pairs(out)
    sample = index_build.settings_of(folders[0])["train_sample"]
    peer_s, peer_pairs = peer(x, y, factory, nprobe, args.k, sample, 0)
    row = {"setting": factory, "nprobe": nprobe, "rerank": args.rerank,
           "build_s": build_s, "search_s": search_s,
           "bytes_per_row": np.mean([index_build.memory_bytes(f)
                                     for f in folders]) / args.rows,
           "recall_fwd": recall(found[0], fwd[1]),
           "recall_bwd": recall(found[1], bwd[1]),
           "same_pairs": len(ours_pairs & exact_pairs) / len(exact_pairs),
           "peer_same_pairs": len(peer_pairs & exact_pairs) / len(exact_pairs),
           "peer_build_and_search_s": peer_s,
           "peer_over_ours": peer_s / (build_s + search_s)}
    print(json.dumps(row), file=sys.stderr)
    rows.append(row)
    save()


def hashed_ngrams(lines: list[str], dim: int) -> np.ndarray:
  """Bag of character 3-5-grams hashed into `dim` signed buckets."""
  out = np.zeros((len(lines), dim), np.float32)
  for i, line in enumerate(lines):
    text = f" {line.lower()} "
    for n in (3, 4, 5):
      for j in range(len(text) - n + 1):
        h = zlib.crc32(text[j:j + n].encode())
        out[i, h % dim] += 1.0 if h & (1 << 31) else -1.0
  return out


def benchmark_sides(lang: str, ngram_dim: int, work: str) -> dict:
  """split -> ((src, tgt) sides embedded by `hashed_ngrams`, gold pairs)
  of the news benchmarks of `paraflax mining-set`, dev and test."""
  from paraflax.evaluation import mining_set  # pylint: disable=g-import-not-at-top
  from paraflax.mining import sides as sides_lib  # pylint: disable=g-import-not-at-top
  sets = {}
  for split in ("dev", "test"):
    folder = os.path.join(work, split)
    mining_set.build_folder(lang=lang, split=split, output=folder)
    bench = mining_set.read(folder)
    sides = [sides_lib.Side(hashed_ngrams(t, ngram_dim), t, f"{split}",
                            f"{split}-{n}")
             for n, t in enumerate((bench.src, bench.tgt))]
    sets[split] = (sides, bench.gold)
  return sets


def tsv_pairs(path: str, src, tgt) -> tuple[np.ndarray, ...]:
  """(score, src index, tgt index) of a mined TSV of the sides' texts."""
  with open(path, encoding="utf-8") as f:
    lines = [l.rstrip("\n").split("\t") for l in f]
  index_of = [{t: i for i, t in enumerate(s.texts)} for s in (src, tgt)]
  score = np.array([float(l[0]) for l in lines])
  s_idx = np.array([index_of[0][l[1]] for l in lines])
  t_idx = np.array([index_of[1][l[2]] for l in lines])
  return score, s_idx, t_idx


def split_quality(split: str, score: np.ndarray, s_idx: np.ndarray,
                  t_idx: np.ndarray, gold: set, threshold: float | None
                  ) -> tuple[float, dict]:
  """The threshold (on dev: the F1-optimal one; on test: `threshold`) and
  P/R/F1 x 100 of the pairs kept at it."""
  from paraflax.mining import margin  # pylint: disable=g-import-not-at-top
  if split == "dev":
    threshold, p, r, f1 = margin.best_threshold(score, s_idx, t_idx, gold)
  else:
    keep = score >= threshold
    p, r, f1 = margin.precision_recall_f1(zip(s_idx[keep], t_idx[keep]), gold)
  return threshold, {f"{split}_precision": 100 * p,
                     f"{split}_recall": 100 * r, f"{split}_f1": 100 * f1}


def quality_part(args, work: str, rows: list[dict],
                 save: Callable[[], None]) -> None:
  """Appends a row per search to `rows`, calling `save` after each."""
  from paraflax.mining import pipeline  # pylint: disable=g-import-not-at-top
  sets = benchmark_sides(args.lang, args.ngram_dim, work)
  for factory, nprobe in [("exact", None)] + [
      (f.format(nlist=64), p) for f, p in QUALITY_SETTINGS]:
    result = {"setting": factory, "nprobe": nprobe}
    threshold = None
    for split in ("dev", "test"):
      (src, tgt), gold = sets[split]
      options = (pipeline.Options(k=4, dedup=False) if factory == "exact"
                 else pipeline.Options(k=4, dedup=False, index=factory,
                                       nprobe=nprobe, rerank=args.rerank))
      out = os.path.join(work, f"{split}-{len(rows)}.tsv")
      pipeline.mine(src, tgt, options, out)
      threshold, figures = split_quality(
          split, *tsv_pairs(out, src, tgt), gold, threshold)
      result.update(figures)
    result["dev_threshold"] = threshold
    print(json.dumps(result), file=sys.stderr)
    rows.append(result)
    save()


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--rows", type=int, default=20_000)
  parser.add_argument("--dim", type=int, default=64)
  parser.add_argument("--clusters", type=int, default=1000)
  parser.add_argument("--nlist", type=int, default=256)
  parser.add_argument("--k", type=int, default=4)
  parser.add_argument("--rerank", type=int, default=16)
  parser.add_argument("--lang", default="de")
  parser.add_argument("--ngram-dim", type=int, default=256)
  parser.add_argument("--skip-recall", action="store_true")
  parser.add_argument("--skip-quality", action="store_true")
  parser.add_argument("--output", required=True)
  args = parser.parse_args()
  report = {**children.run_facts(__file__, None),
            "rows_per_side": args.rows, "dim": args.dim, "k": args.k,
            "clusters": args.clusters, "nlist": args.nlist,
            "rerank": args.rerank}

  def save() -> None:
    """The report so far, replacing the last one whole (with the run's
    span so far and its manifest entry): a run stopped part-way leaves a
    recorded file of the settings it finished."""
    os.makedirs(os.path.dirname(os.path.abspath(args.output)), exist_ok=True)
    children.write_result(args.output, report)

  with tempfile.TemporaryDirectory() as work:
    for part, skip, run in (("quality", args.skip_quality, quality_part),
                            ("recall", args.skip_recall, recall_part)):
      if not skip:
        report[part] = []
        run(args, os.path.join(work, part), report[part], save)
  save()
  print(json.dumps(report, indent=2))


if __name__ == "__main__":
  main()
