"""Reconstructing a known bitext (Artetxe & Schwenk 2019, the UN corpus
evaluation): both sides of a parallel corpus shuffled, mined as any two
corpora are, and the mined pairs scored against the known alignment.

Mining is `paraflax mine`'s exact search: each side's distinct sentences
are searched (a repeated sentence is not its copy's neighbour), and a
pair of distinct sentences stands for every pair of lines that hold them
(`margin.expand_pairs`). A line pair counts as found when its two
sentences are a pair of the bitext, so every copy of a repeated pair is
gold. Precision / recall / F1 at the F1-optimal threshold (`margin.
best_threshold`: the ceiling a tuned threshold reaches) and at fixed
thresholds, per k x margin x retrieval.
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np

from paraflax import errors
from paraflax.mining import knn
from paraflax.mining import margin

Pair = tuple[int, int]


class Shuffled:
  """A bitext's two sides shuffled apart, deduplicated, with its gold."""

  def __init__(self, pairs: Sequence[tuple[str, str]], seed: int = 0):
    if not pairs:
      raise errors.DataError("the bitext holds no pairs; nothing to "
                             "reconstruct.")
    rng = np.random.default_rng(seed)
    n = len(pairs)
    src_order, tgt_order = rng.permutation(n), rng.permutation(n)
    self.src = [pairs[i][0] for i in src_order]  # line -> sentence
    self.tgt = [pairs[i][1] for i in tgt_order]
    self.src_unique, self.src_inverse = margin.deduplicate(self.src)
    self.tgt_unique, self.tgt_inverse = margin.deduplicate(self.tgt)
    # Pair i lies at source line where_src[i] and target line where_tgt[i].
    where_src, where_tgt = np.argsort(src_order), np.argsort(tgt_order)
    known = np.unique(np.stack([self.src_inverse[where_src],
                                self.tgt_inverse[where_tgt]], 1), axis=0)
    lines = margin.expand_pairs(
        margin.Mined(known[:, 0], known[:, 1], np.zeros(len(known))),
        self.src_inverse, self.tgt_inverse)
    self.gold: set[Pair] = set(zip(lines.src.tolist(), lines.tgt.tolist()))


def parse_thresholds(values: Sequence[str]) -> dict[str | None, list[float]]:
  """`T` (every margin) or `MARGIN=T` (that margin only) -> {margin or None:
  thresholds}."""
  out: dict[str | None, list[float]] = {}
  for value in values:
    name, _, number = value.rpartition("=")
    if name and name not in margin.MARGINS:
      raise errors.ConfigError(f"--thresholds {value}: {name!r} is not a "
                               f"margin; use one of {sorted(margin.MARGINS)}.")
    try:
      out.setdefault(name or None, []).append(float(number))
    except ValueError:
      raise errors.ConfigError(
          f"--thresholds {value}: give a number, or MARGIN=NUMBER (e.g. "
          "ratio=1.05).") from None
  return out


def _prf(values: Sequence[float]) -> dict[str, float]:
  return dict(zip(("precision", "recall", "f1"), map(float, values)))


def _scored(pairs: margin.Mined, gold: set[Pair], threshold: float) -> dict:
  keep = pairs.score >= threshold
  found = zip(pairs.src[keep], pairs.tgt[keep])
  return {"threshold": threshold, "pairs": int(keep.sum()),
          **_prf(margin.precision_recall_f1(found, gold))}


def _row(c: margin.Candidates, retrieval: str, bitext: Shuffled,
         fixed: Sequence[float]) -> dict:
  start = time.perf_counter()
  pairs = margin.expand_pairs(margin.select(c, retrieval),
                              bitext.src_inverse, bitext.tgt_inverse)
  threshold, *prf = margin.best_threshold(pairs.score, pairs.src,
                                          pairs.tgt, bitext.gold)
  return {"retrieval": retrieval, "mined": len(pairs.score),
          "threshold": threshold,
          "pairs": int((pairs.score >= threshold).sum()),
          **_prf(prf),
          "fixed": [_scored(pairs, bitext.gold, t) for t in fixed],
          "seconds": time.perf_counter() - start}


def evaluate(bitext: Shuffled, x: np.ndarray, y: np.ndarray, *,
             ks: Sequence[int] = (4,), margins: Sequence[str] = ("ratio",),
             retrievals: Sequence[str] = ("max",),
             thresholds: Mapping[str | None, Sequence[float]] | None = None,
             block: int = 8192) -> list[dict]:
  """One row per k x margin x retrieval of `bitext`, whose distinct
  sentences x (source) and y (target) embed, row for row: P / R / F1 at the
  F1-optimal threshold (`threshold`, inf when no mined pair is gold), at
  each of `thresholds` ({margin: [...]}, None: every margin's), the pairs
  mined and kept, and the seconds of the k-NN search (`knn_seconds`) and of
  scoring and retrieval (`seconds`)."""
  for name, values in (("--margin", margins), ("--retrieval", retrievals)):
    known = margin.MARGINS if name == "--margin" else margin.STRATEGIES
    bad = [v for v in values if v not in known]
    if bad or not values:
      raise errors.ConfigError(f"{name} {' '.join(bad)}: use one or more of "
                               f"{', '.join(known)}.")
  if len(x) != len(bitext.src_unique) or len(y) != len(bitext.tgt_unique):
    raise errors.DataError(
        f"{len(x)} x {len(y)} embeddings for {len(bitext.src_unique)} x "
        f"{len(bitext.tgt_unique)} distinct sentences; embed the distinct "
        "sentences of each side, in order.")
  thresholds = thresholds or {}
  rows = []
  for k in dict.fromkeys(ks):
    start = time.perf_counter()
    neighbours = knn.both_ways(x, y, k, block=block,
                               names=("source sentences", "target sentences"))
    knn_seconds = time.perf_counter() - start
    for name in dict.fromkeys(margins):
      c = margin.from_neighbours(*neighbours, margin=name)
      fixed = [*thresholds.get(None, ()), *thresholds.get(name, ())]
      rows += [{"k": k, "margin": name, **_row(c, retrieval, bitext, fixed),
                "knn_seconds": knn_seconds}
               for retrieval in dict.fromkeys(retrievals)]
  return rows


def format_table(rows: Sequence[dict]) -> str:
  """P / R / F1 x 100 at the F1-optimal threshold and at each fixed one,
  with the pairs kept."""
  lines = [f"{'k':>3} {'margin':<9}{'retrieval':<10}{'mined':>7}"
           f"{'best thr':>10}{'pairs':>7}{'P':>7}{'R':>7}{'F1':>7}"
           f"{'seconds':>9}   fixed thresholds: thr pairs P R F1"]
  for r in rows:
    fixed = "  ".join(
        f"{f['threshold']:g}: {f['pairs']} {100 * f['precision']:.2f} "
        f"{100 * f['recall']:.2f} {100 * f['f1']:.2f}" for f in r["fixed"])
    lines.append(
        f"{r['k']:>3} {r['margin']:<9}{r['retrieval']:<10}{r['mined']:>7}"
        f"{r['threshold']:>10.4f}{r['pairs']:>7}{100 * r['precision']:>7.2f}"
        f"{100 * r['recall']:>7.2f}{100 * r['f1']:>7.2f}"
        f"{r['knn_seconds'] + r['seconds']:>9.2f}   {fixed}")
  return "\n".join(lines)
