r"""Bitext mining from the same float32 embeddings: `paraflax mine` against
what a sentence-transformers user writes (`util.semantic_search` both
ways, ratio margin, greedy `max`, after the library's
parallel-sentence-mining example, whose k-NN is faiss's), on the de-en news benchmarks of
`paraflax mining-set` (dev and test, 1,000 gold pairs among 5,000 sentences
a side).

Both sides get the same embeddings: hashed character 3-5-grams
(`mining_ann.hashed_ngrams`, 256 dimensions), since no encoder weights can
be downloaded here; the figures compare the mining, not an encoder. Each
side mines each split `--repeats` times; the time is the median repeat of
the mining alone (ours: `pipeline.mine` from the embeddings to the TSV,
its first call with jax's compilation reported apart; theirs: the k-NN,
margin and selection in `lab/benchmarks/sentence_transformers_child.py` under
the peer's python). P/R/F1 x 100: the threshold F1-optimal on dev and
applied to test, as in `mining_ann.py`. children.write_result writes
--output, with the run's facts and the peer child's sentence-transformers
and torch versions as the peer's.

  nice -n 10 .venv/bin/python lab/benchmarks/mining_vs_sentence_transformers.py \
      --peer-python PEER_VENV/bin/python \
      --output lab/results/mining_vs_sentence_transformers.HW.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import children  # pylint: disable=g-import-not-at-top,wrong-import-position
import mining_ann  # pylint: disable=g-import-not-at-top,wrong-import-position

_HERE = os.path.dirname(os.path.abspath(__file__))


def _ours(sides, k: int, repeats: int, work: str) -> dict:
  """Seconds of each `pipeline.mine` call (each to a new TSV: one that
  exists would be found mined) and the last call's pairs."""
  from paraflax.mining import pipeline  # pylint: disable=g-import-not-at-top
  seconds = []
  for n in range(repeats + 1):  # the first compiles
    out = os.path.join(work, f"ours-{sides[0].name}-{n}.tsv")
    start = time.perf_counter()
    pipeline.mine(*sides, pipeline.Options(k=k, dedup=False), out)
    seconds.append(time.perf_counter() - start)
  return {"first_s": seconds[0], "seconds": seconds[1:],
          "pairs": mining_ann.tsv_pairs(out, *sides)}


def _theirs(args, sides, work: str) -> dict:
  """The peer child's seconds and pairs, on the sides' embeddings."""
  paths = [os.path.join(work, f"{side.name}-{s}.npy")
           for side, s in zip(sides, "xy")]
  for path, side in zip(paths, sides):
    np.save(path, np.asarray(side.emb, np.float32))
  pairs = os.path.join(work, f"theirs-{sides[0].name}.npz")
  proc = subprocess.run(
      [args.peer_python, os.path.join(_HERE, "sentence_transformers_child.py"),
       "--x", paths[0], "--y", paths[1], "--k", str(args.k),
       "--repeats", str(args.repeats), "--pairs", pairs],
      stdout=subprocess.PIPE, text=True, check=False)
  lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
  if proc.returncode or not lines:
    raise children.ChildFailed("sentence-transformers child failed (exit "
                               f"{proc.returncode}); its stderr is above.")
  with np.load(pairs) as found:
    mined = (found["score"], found["src"], found["tgt"])
  return {**json.loads(lines[-1]), "pairs": mined}


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--peer-python", required=True,
                      help="a python with torch and sentence-transformers")
  parser.add_argument("--lang", default="de")
  parser.add_argument("--ngram-dim", type=int, default=256)
  parser.add_argument("--k", type=int, default=4)
  parser.add_argument("--repeats", type=int, default=3)
  parser.add_argument("--output", required=True)
  args = parser.parse_args(argv)
  report = {**children.run_facts(__file__, argv),
            "embeddings": f"hashed character 3-5-grams, {args.ngram_dim} "
                          "dimensions, float32, the same for both",
            "k": args.k, "margin": "ratio", "retrieval": "max",
            "repeats": args.repeats, "rows": {}}
  with tempfile.TemporaryDirectory() as work:
    sets = mining_ann.benchmark_sides(args.lang, args.ngram_dim, work)
    found = {"paraflax": {}, "sentence-transformers": {}}
    for split, (sides, _) in sets.items():
      found["paraflax"][split] = _ours(sides, args.k, args.repeats, work)
      found["sentence-transformers"][split] = _theirs(args, sides, work)
    for tool, runs in found.items():
      row, threshold = {}, None
      for split in ("dev", "test"):
        run = runs[split]
        threshold, figures = mining_ann.split_quality(
            split, *run.pop("pairs"), sets[split][1], threshold)
        row.update(figures)
        row[f"{split}_median_s"] = statistics.median(run["seconds"])
        row[f"{split}_run"] = run
      row["dev_threshold"] = threshold
      report["rows"][tool] = row
      print(tool, json.dumps(row), file=sys.stderr)
  report["their_time_over_ours"] = {
      split: report["rows"]["sentence-transformers"][f"{split}_median_s"]
      / report["rows"]["paraflax"][f"{split}_median_s"]
      for split in ("dev", "test")}
  theirs = report["rows"]["sentence-transformers"]["test_run"]
  children.write_result(args.output, report, peers={
      "sentence-transformers": theirs["sentence_transformers"],
      "torch": theirs["torch"]})
  print(json.dumps(report, indent=2))


if __name__ == "__main__":
  main()
