"""Mining P/R/F1 on the benchmarks of `mining_set` (BUCC-style).

`evaluate` mines the dev and test embeddings with every margin x retrieval
strategy, picks the F1-optimal threshold on dev and applies it to test.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Sequence

import numpy as np

from paraflax import errors
from paraflax import files
from paraflax.evaluation import mining_set
from paraflax.mining import embeddings_io
from paraflax.mining import knn
from paraflax.mining import margin



@dataclasses.dataclass(frozen=True)
class Embedded:
  """A benchmark's embeddings: row i of `src` embeds line i of its src.txt."""
  src: np.ndarray  # [Ns, d]
  tgt: np.ndarray  # [Nt, d]
  gold: frozenset[mining_set.Pair]
  name: str  # what error messages call it


def load_embedded(folder: str, src_emb: str, tgt_emb: str, dim: int, *,
                  fp16: bool = False) -> Embedded:
  """A benchmark folder with LASER embedding files of its two text files."""
  benchmark = mining_set.read(folder)
  emb = []
  for path, text, lines in ((src_emb, "src.txt", len(benchmark.src)),
                            (tgt_emb, "tgt.txt", len(benchmark.tgt))):
    matrix = embeddings_io.read(path, dim, fp16=fp16)
    if len(matrix) != lines:
      raise errors.DataError(
          f"{path}: {len(matrix)} embeddings but "
          f"{os.path.join(folder, text)} has {lines} lines; embed that file "
          "(one row per line, same order), or check --dim.")
    emb.append(matrix)
  return Embedded(emb[0], emb[1], benchmark.gold, folder)


def _neighbours(e: Embedded, k: int, block: int):
  bad = [p for p in e.gold if not (p[0] < len(e.src) and p[1] < len(e.tgt))]
  if bad:
    raise errors.DataError(f"{e.name}: gold pair(s) {sorted(bad)[:5]} lie "
                           f"outside the {len(e.src)} x {len(e.tgt)} "
                           "embeddings.")
  return knn.both_ways(e.src, e.tgt, k, block=block,
                       names=(f"{e.name} src", f"{e.name} tgt"))


def _prf(prefix: str, values: Sequence[float]) -> dict[str, float]:
  return {f"{prefix}_{name}": float(v)
          for name, v in zip(("precision", "recall", "f1"), values)}


def _row(margin_name: str, strategy: str, dev: margin.Candidates,
         test: margin.Candidates, dev_gold: frozenset[mining_set.Pair],
         test_gold: frozenset[mining_set.Pair]) -> dict:
  pairs = margin.select(dev, strategy)
  threshold, *dev_prf = margin.best_threshold(pairs.score, pairs.src,
                                              pairs.tgt, dev_gold)
  kept = margin.select(test, strategy, threshold)
  every = margin.select(test, strategy)
  return {"margin": margin_name, "retrieval": strategy,
          "threshold": threshold, **_prf("dev", dev_prf),
          **_prf("test", margin.precision_recall_f1(
              zip(kept.src, kept.tgt), test_gold)),
          "test_pairs": len(kept.src),
          **_prf("test_all", margin.precision_recall_f1(
              zip(every.src, every.tgt), test_gold)),
          "test_all_pairs": len(every.src)}


def evaluate(dev: Embedded, test: Embedded, *, k: int = 4,
             block: int = 8192) -> list[dict]:
  """One row per margin x retrieval strategy.

  dev_*: at the F1-optimal threshold on dev (`threshold`, inf when no dev
  candidate is gold: keep nothing); test_*: on test at that threshold;
  test_all_*: on test with no threshold. The k-NN search runs once per set.
  """
  dev_nn, test_nn = _neighbours(dev, k, block), _neighbours(test, k, block)
  rows = []
  for name in margin.MARGINS:
    dev_c = margin.from_neighbours(*dev_nn, margin=name)
    test_c = margin.from_neighbours(*test_nn, margin=name)
    rows += [_row(name, strategy, dev_c, test_c, dev.gold, test.gold)
             for strategy in margin.STRATEGIES]
  return rows


def format_table(rows: Sequence[dict]) -> str:
  """P / R / F1 x 100: dev at its optimum, test at the dev threshold, test
  with no threshold."""
  groups = ("dev", "test", "test_all")
  lines = [f"{'':<20}{'':>10}" + "".join(f"{g + ' (P R F1)':>22}"
                                         for g in groups),
           f"{'margin':<10}{'retrieval':<10}{'threshold':>10}"
           + "".join(f"{'P':>8}{'R':>7}{'F1':>7}" for _ in groups)]
  for r in rows:
    scores = "".join(f"{100 * r[f'{g}_precision']:>8.2f}"
                     f"{100 * r[f'{g}_recall']:>7.2f}"
                     f"{100 * r[f'{g}_f1']:>7.2f}" for g in groups)
    lines.append(f"{r['margin']:<10}{r['retrieval']:<10}"
                 f"{r['threshold']:>10.4f}{scores}")
  return "\n".join(lines)


def to_json(rows: Sequence[dict], **meta) -> str:
  """`meta` and the rows; a threshold of null keeps nothing (no dev
  candidate was gold), since JSON has no infinity."""
  rows = [{**r, "threshold": r["threshold"] if math.isfinite(r["threshold"])
           else None} for r in rows]
  return json.dumps({**meta, "rows": rows}, indent=2) + "\n"


def _contents(folder: str) -> list[bytes] | None:
  """A benchmark folder's sentences and gold pairs; None if one is absent
  (`load_embedded` names it)."""
  out = []
  for name in mining_set.FILES[:3]:
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
      return None
    with open(path, "rb") as f:
      out.append(f.read())
  return out


def refuse_same_benchmark(dev: str, test: str) -> None:
  """The test figures are read at the dev set's best threshold: a test set
  that is the dev set (one folder, or a copy of it) would report the
  tuned figure as the held-out one."""
  held = _contents(dev)
  if (os.path.realpath(dev) == os.path.realpath(test)
      or (held is not None and held == _contents(test))):
    raise errors.ConfigError(
        f"--dev {dev} and --test {test} hold the same benchmark: the test "
        "figures would be those the threshold was tuned on. Give a test "
        "benchmark built from other bitext (paraflax mining-set).")


def evaluate_folders(dev: str, test: str, *, dev_src_emb: str,
                     dev_tgt_emb: str, test_src_emb: str, test_tgt_emb: str,
                     dim: int, fp16: bool = False, k: int = 4,
                     output: str | None = None, overwrite: bool = False
                     ) -> list[dict]:
  """`paraflax mining-eval`: prints the table of `evaluate` on two
  benchmark folders and their embedding files; also writes it to `output`."""
  if output:
    files.check_output(output)
  refuse_same_benchmark(dev, test)
  emb = {"dev_src_emb": dev_src_emb, "dev_tgt_emb": dev_tgt_emb,
         "test_src_emb": test_src_emb, "test_tgt_emb": test_tgt_emb}
  rows = evaluate(
      load_embedded(dev, dev_src_emb, dev_tgt_emb, dim, fp16=fp16),
      load_embedded(test, test_src_emb, test_tgt_emb, dim, fp16=fp16), k=k)
  print(f"mining P/R/F1 x 100, k={k}; dev {dev}, test {test}")
  print(format_table(rows))
  if output:
    files.write_once(output, to_json(rows, k=k, dev=dev, test=test,
                                     embeddings=emb), overwrite=overwrite)
  return rows
