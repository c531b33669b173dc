"""Margin-based parallel sentence mining (Artetxe & Schwenk 2019).

score(x, y) = margin(cos(x, y), mean_x / 2 + mean_y / 2), where mean_x is the
mean cosine of x to its k nearest neighbours in Y and mean_y that of y to its
k nearest neighbours in X. Both means are always computed (LASER's `fwd` and
`bwd` modes read one that was never filled in).

Candidates are each sentence's k nearest neighbours on the other side; a
strategy turns them into pairs:
  fwd        every x with its best y by margin among its k neighbours;
  bwd        every y with its best x;
  intersect  pairs chosen both ways (scored from the forward side);
  max        fwd and bwd choices together, taken greedily by descending score
             so that each x and each y is used at most once (as LASER).
Pairs come sorted by descending score, equal scores by (src, tgt) ascending.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

import jax
import numpy as np
from jax.sharding import Mesh

from paraflax import errors
from paraflax.mining import knn as knn_lib

Pair = tuple[int, int]


def absolute(a: np.ndarray, b: np.ndarray) -> np.ndarray:
  del b  # Plain cosine: the neighbourhood is ignored.
  return a


def distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
  return a - b


def ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
  return a / b


MARGINS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "absolute": absolute, "distance": distance, "ratio": ratio}


class Mined(NamedTuple):
  """Mined pairs: indices into x and y, and their margin scores."""
  src: np.ndarray  # [P] int64
  tgt: np.ndarray  # [P] int64
  score: np.ndarray  # [P] float64


@dataclasses.dataclass(frozen=True)
class Candidates:
  """The k nearest neighbours both ways, with cosines and margin scores."""
  fwd_index: np.ndarray  # [Nx, k] into y, by descending cosine
  fwd_cos: np.ndarray  # [Nx, k]
  fwd_score: np.ndarray  # [Nx, k] margin of (x_i, y_fwd_index[i, r])
  bwd_index: np.ndarray  # [Ny, k] into x
  bwd_cos: np.ndarray  # [Ny, k]
  bwd_score: np.ndarray  # [Ny, k] margin of (x_bwd_index[j, r], y_j)
  mean_x: np.ndarray  # [Nx] mean cosine of x_i to its k neighbours in y
  mean_y: np.ndarray  # [Ny] mean cosine of y_j to its k neighbours in x


def _lookup(registry: dict, name: str, what: str):
  if name not in registry:
    raise errors.ConfigError(f"unknown {what} {name!r}; use one of "
                             f"{sorted(registry)}.")
  return registry[name]


def _margin_scores(fn: Callable, cos_NxK: np.ndarray, mean_N: np.ndarray,
                   other_mean_NxK: np.ndarray, side: str) -> np.ndarray:
  with np.errstate(divide="ignore", invalid="ignore"):  # checked below
    score_NxK = fn(cos_NxK, mean_N[:, None] / 2 + other_mean_NxK / 2)
  bad = np.flatnonzero(~np.isfinite(score_NxK).all(axis=1))
  if bad.size:
    # Only `ratio` can get here: cosines and means are finite.
    raise errors.DataError(
        f"the margin is undefined for {side} row(s) {bad[:5].tolist()} "
        f"({bad.size} in all): a candidate pair's neighbourhood means sum "
        f"to 0 (zero embeddings on both sides?). Drop zero embeddings or use "
        f"margin='distance'.")
  return score_NxK


def score_candidates(x: np.ndarray | jax.Array, y: np.ndarray | jax.Array,
                     k: int = 4, *, margin: str = "ratio", block: int = 8192,
                     mesh: Mesh | None = None) -> Candidates:
  """Forward (x -> y) and backward (y -> x) k-NN and their margin scores.

  x: [Nx, d] and y: [Ny, d] embeddings; `block` and `mesh` as in `knn.knn`.
  """
  _lookup(MARGINS, margin, "margin")  # before the k-NN
  return from_neighbours(*knn_lib.both_ways(x, y, k, block=block, mesh=mesh),
                         margin=margin)


def from_neighbours(fwd: knn_lib.Neighbours, bwd: knn_lib.Neighbours, *,
                    margin: str = "ratio") -> Candidates:
  """Candidates from k-NN results found elsewhere (a resumed run, faiss).

  fwd: (cosines [Nx, k] descending, indices [Nx, k] into y), as `knn.knn`
  returns them; bwd: the same from y to x.
  """
  fn = _lookup(MARGINS, margin, "margin")
  (fwd_cos, fwd_index), (bwd_cos, bwd_index) = fwd, bwd
  fwd_cos, bwd_cos = fwd_cos.astype(np.float64), bwd_cos.astype(np.float64)
  mean_x, mean_y = knn_lib.neighbourhood_means(fwd_cos, bwd_cos)
  return Candidates(
      fwd_index=fwd_index, fwd_cos=fwd_cos,
      fwd_score=_margin_scores(fn, fwd_cos, mean_x, mean_y[fwd_index], "x"),
      bwd_index=bwd_index, bwd_cos=bwd_cos,
      bwd_score=_margin_scores(fn, bwd_cos, mean_y, mean_x[bwd_index], "y"),
      mean_x=mean_x, mean_y=mean_y)


def _ordered(pairs: Mined) -> Mined:
  """By descending score; equal scores by (src, tgt) ascending."""
  order = np.lexsort((pairs.tgt, pairs.src, -pairs.score))
  return Mined(*(a[order] for a in pairs))


def _best(index_NxK: np.ndarray, score_NxK: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Row, its best neighbour by margin and that score. On equal margins the
  nearer neighbour wins (argmax takes the first)."""
  rows = np.arange(len(index_NxK))
  best = np.argmax(score_NxK, axis=1)
  return rows, index_NxK[rows, best].astype(np.int64), score_NxK[rows, best]


def forward(c: Candidates) -> Mined:
  src, tgt, score = _best(c.fwd_index, c.fwd_score)
  return Mined(src, tgt, score)


def backward(c: Candidates) -> Mined:
  tgt, src, score = _best(c.bwd_index, c.bwd_score)
  return Mined(src, tgt, score)


def intersect(c: Candidates) -> Mined:
  fwd, bwd = forward(c), backward(c)
  # bwd.src[j] is y_j's choice; keep x_i when its choice chose it back.
  keep = bwd.src[fwd.tgt] == fwd.src
  return Mined(*(a[keep] for a in fwd))


def max_score(c: Candidates) -> Mined:
  union = _ordered(Mined(*(np.concatenate(parts) for parts in
                           zip(forward(c), backward(c)))))
  used_src, used_tgt = bytearray(len(c.mean_x)), bytearray(len(c.mean_y))
  keep = []
  for n, (s, t) in enumerate(zip(union.src.tolist(), union.tgt.tolist())):
    if not (used_src[s] or used_tgt[t]):
      used_src[s] = used_tgt[t] = 1
      keep.append(n)
  return Mined(*(a[keep] for a in union))


def every_candidate(c: Candidates) -> Mined:
  """Each distinct (src, tgt) candidate pair once (a sentence and one of its
  k neighbours, either way), with its margin score, by descending score."""
  k = c.fwd_index.shape[1]
  src = np.concatenate([np.repeat(np.arange(len(c.fwd_index)), k),
                        c.bwd_index.ravel()])
  tgt = np.concatenate([c.fwd_index.ravel(),
                        np.repeat(np.arange(len(c.bwd_index)), k)])
  score = np.concatenate([c.fwd_score.ravel(), c.bwd_score.ravel()])
  _, first = np.unique(np.stack([src, tgt], axis=1), axis=0,
                       return_index=True)
  return _ordered(Mined(src[first].astype(np.int64),
                        tgt[first].astype(np.int64), score[first]))


STRATEGIES: dict[str, Callable[[Candidates], Mined]] = {
    "fwd": forward, "bwd": backward, "intersect": intersect, "max": max_score}


def select(candidates: Candidates, strategy: str = "max",
           threshold: float | None = None) -> Mined:
  """Pairs by `strategy`, those with score >= `threshold` (all if None),
  sorted by descending score."""
  pairs = _lookup(STRATEGIES, strategy, "candidate strategy")(candidates)
  if threshold is not None:
    # For `max` this equals thresholding inside the greedy pass: pairs below
    # the threshold come last, so they never block a pair above it.
    keep = pairs.score >= threshold
    pairs = Mined(*(a[keep] for a in pairs))
  return _ordered(pairs)


def mine(x: np.ndarray | jax.Array, y: np.ndarray | jax.Array, k: int = 4, *,
         margin: str = "ratio", strategy: str = "max",
         threshold: float | None = None, block: int = 8192,
         mesh: Mesh | None = None) -> Mined:
  """`score_candidates` then `select`."""
  _lookup(STRATEGIES, strategy, "candidate strategy")  # before the k-NN
  return select(score_candidates(x, y, k, margin=margin, block=block,
                                 mesh=mesh), strategy, threshold)


def deduplicate(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
  """Unique texts in first-occurrence order and, per input line, the index of
  its text among them: texts[i] == unique[inverse[i]]."""
  index: dict[str, int] = {}
  inverse = np.fromiter((index.setdefault(t, len(index)) for t in texts),
                        np.int64, len(texts))
  return list(index), inverse


def expand_pairs(pairs: Mined, src_inverse: np.ndarray,
                 tgt_inverse: np.ndarray) -> Mined:
  """Pairs of unique sentences -> pairs of original lines.

  A mined pair (u, v) becomes every line pair (a, b) with
  src_inverse[a] == u and tgt_inverse[b] == v, all with its score: a repeated
  sentence is the same sentence wherever it occurs, so every occurrence is
  mined (then one source line may appear in several pairs even under `max`).
  Order: as `pairs`, then by (a, b) ascending.
  """
  src_inverse, tgt_inverse = np.asarray(src_inverse), np.asarray(tgt_inverse)

  def lines_of(inverse: np.ndarray, unique: np.ndarray):
    """Per pair: how many lines carry its sentence, and where they start in
    the lines sorted by sentence."""
    counts = np.bincount(inverse)
    starts = np.cumsum(counts) - counts
    return np.argsort(inverse, kind="stable"), counts[unique], starts[unique]

  src_lines, src_count, src_start = lines_of(src_inverse, pairs.src)
  tgt_lines, tgt_count, tgt_start = lines_of(tgt_inverse, pairs.tgt)
  per_pair = src_count * tgt_count
  pair = np.repeat(np.arange(len(pairs.src)), per_pair)
  within = np.arange(len(pair)) - np.repeat(np.cumsum(per_pair) - per_pair,
                                            per_pair)
  a, b = np.divmod(within, tgt_count[pair])
  return Mined(src_lines[src_start[pair] + a], tgt_lines[tgt_start[pair] + b],
               pairs.score[pair])


def precision_recall_f1(pred: Iterable[Pair], gold: set[Pair]
                        ) -> tuple[float, float, float]:
  """Of the distinct predicted pairs against the gold pairs; precision of no
  predictions is 0."""
  if not gold:
    raise errors.DataError("the gold pair set is empty; recall is undefined. "
                           "Check the gold file.")
  pred = {(int(s), int(t)) for s, t in pred}
  correct = len(pred & gold)
  return (correct / len(pred) if pred else 0.0, correct / len(gold),
          2 * correct / (len(pred) + len(gold)))


def best_threshold(scores: np.ndarray, src_idx: np.ndarray,
                   tgt_idx: np.ndarray, gold: set[Pair]
                   ) -> tuple[float, float, float, float]:
  """The F1-optimal threshold over candidate pairs (BUCC).

  Every cut between distinct scores is tried (keep score >= cut); recall is
  relative to |gold|. The threshold is midway between the last kept and the
  first dropped score (as LASER's BUCC script), so it reproduces the returned
  precision, recall and F1 on these candidates. On equal F1 the higher
  threshold wins. If no candidate is gold: (inf, 0, 0, 0), i.e. keep nothing.
  """
  if not gold:
    raise errors.DataError("the gold pair set is empty; recall is undefined. "
                           "Check the gold file.")
  score = np.asarray(scores, np.float64)
  pairs = list(zip(np.asarray(src_idx).tolist(), np.asarray(tgt_idx).tolist()))
  if len(set(pairs)) != len(pairs):
    raise errors.DataError("candidate pairs repeat; a repeated pair would be "
                           "counted twice. Pass each (src, tgt) once.")
  if not any(pair in gold for pair in pairs):
    return float("inf"), 0.0, 0.0, 0.0
  order = np.argsort(-score, kind="stable")
  sorted_score = score[order]
  correct = np.cumsum([pairs[i] in gold for i in order])
  # Cuts fall after the last of each run of equal scores.
  cuts = np.flatnonzero(np.append(sorted_score[1:] < sorted_score[:-1], True))
  # F1 = 2 tp / (kept + |gold|); argmax takes the first, highest cut.
  cut = int(cuts[np.argmax(correct[cuts] / (cuts + 1 + len(gold)))])
  threshold = sorted_score[cut]
  if cut + 1 < len(pairs):
    middle = (sorted_score[cut] + sorted_score[cut + 1]) / 2
    # Adjacent floats can round the midpoint down onto the dropped score.
    threshold = middle if middle > sorted_score[cut + 1] else threshold
  tp, kept = int(correct[cut]), cut + 1
  return (float(threshold), tp / kept, tp / len(gold),
          2 * tp / (kept + len(gold)))
