"""Which back-translated pairs a paraphrase model trains on: the pairs whose
score (from `paraflax score-paraphrases`) lies in `[lo, hi]`, then exactly
`max_pairs` of them drawn by the seed, so that every filter of an ablation
trains on the same amount of data (the paper: 24,000 pairs).

Config: `data.filter` is None, `dict(score=NAME, lo=X, hi=Y)` or
`dict(score="random")` (no bound: only the draw, which then needs
`data.max_pairs`); `data.max_pairs` 0 keeps every pair that passes.

This room sits below `filtering/`, whose scorers it must not import: it
knows the score names from `choices.PARAPHRASE_SCORES` and reads the
values the scorers wrote into the records.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from paraflax import choices
from paraflax import errors
from paraflax import quiet

if TYPE_CHECKING:
  import tensorflow as tf

RANDOM = "random"
SCORE = "score"  # the feature that carries the bounded score until the bound
_BOUNDED = ("score", "lo", "hi")


class Filter(NamedTuple):
  score: str  # a name of choices.PARAPHRASE_SCORES, or RANDOM
  lo: float = -np.inf
  hi: float = np.inf

  @property
  def bounded(self) -> bool:
    return self.score != RANDOM

  def __str__(self) -> str:
    return (f"{self.score} in [{self.lo:g}, {self.hi:g}]" if self.bounded
            else RANDOM)


def from_flag(text: str | None) -> dict[str, Any] | None:
  """A command's `--filter SCORE,LO,HI` or `--filter random` as the
  `data.filter` it stands for (None: no filter)."""
  if text is None:
    return None
  fields = text.split(",")
  if fields == [RANDOM]:
    return {"score": RANDOM}
  try:
    score, lo, hi = fields
    return {"score": score, "lo": float(lo), "hi": float(hi)}
  except ValueError as e:
    raise errors.ConfigError(
        f"--filter {text}: give SCORE,LO,HI (e.g. overlap_1,0.1,0.7) or "
        f"{RANDOM}.") from e


def parse(spec: Mapping[str, Any] | None, max_pairs: int) -> Filter | None:
  """The filter of `data.filter`, checked with `data.max_pairs`."""
  if max_pairs < 0:
    raise errors.ConfigError(f"data.max_pairs={max_pairs}: give a number of "
                             "pairs, or 0 for all.")
  if spec is None:
    return None
  names = (*choices.PARAPHRASE_SCORES, RANDOM)
  score = spec.get("score") if isinstance(spec, Mapping) else None
  if score not in names:
    raise errors.ConfigError(
        f"data.filter={spec!r}: the score is one of {', '.join(names)}, "
        "e.g. dict(score='overlap_1', lo=0.1, hi=0.7).")
  if score == RANDOM:
    if set(spec) != {"score"} or not max_pairs:
      raise errors.ConfigError(
          f"data.filter={spec!r}: the random filter draws data.max_pairs "
          "pairs and takes no bounds; set data.max_pairs > 0.")
    return Filter(RANDOM)
  if set(spec) != set(_BOUNDED):
    raise errors.ConfigError(
        f"data.filter={spec!r}: give exactly score, lo and hi, e.g. "
        f"dict(score={score!r}, lo=0, hi=10).")
  lo, hi = float(spec["lo"]), float(spec["hi"])
  if not lo <= hi:
    raise errors.ConfigError(f"data.filter={spec!r}: lo {lo:g} > hi {hi:g}; "
                             "the kept pairs have lo <= score <= hi.")
  return Filter(score, lo, hi)


def keep_in_bounds(ds: tf.data.Dataset, *, lo: float, hi: float
                   ) -> tf.data.Dataset:
  """The examples whose SCORE lies in [lo, hi], the bounds included."""
  return ds.filter(lambda ex: (ex[SCORE] >= lo) & (ex[SCORE] <= hi))


def drop_score(ds: tf.data.Dataset) -> tf.data.Dataset:
  return ds.map(lambda ex: {k: v for k, v in ex.items() if k != SCORE})


def draw(count: int, *, n: int, seed: int, what: str) -> np.ndarray:
  """Which of `count` examples `take_exactly` keeps, as a mask: `n` drawn
  by `seed` without replacement (the one draw of every path that filters:
  the Task, and `paraflax beam-score`); fewer than `n` is an error naming
  `what` was filtered."""
  if count < n:
    raise errors.DataError(
        f"{what} keeps {count} pairs, fewer than data.max_pairs={n}: widen "
        "the bounds, or lower data.max_pairs.")
  keep = np.zeros(count, bool)
  keep[np.random.default_rng(seed).choice(count, n, replace=False)] = True
  return keep


def described(spec: Filter | None, source: str) -> str:
  """What a filter of the pairs of `source` is called in its errors."""
  source = errors.shown_path(source)
  return f"{source}: data.filter {spec}" if spec else source


def take_exactly(ds: tf.data.Dataset, *, n: int, seed: int, what: str
                 ) -> tf.data.Dataset:
  """`n` examples drawn by `seed` without replacement, in their order;
  fewer than `n` is an error naming `what` was filtered."""
  tf = quiet.tensorflow()  # here: `parse` checks a config without it
  count = int(ds.reduce(np.int64(0), lambda c, _: c + 1))
  chosen = tf.constant(draw(count, n=n, seed=seed, what=what))
  picked = ds.enumerate().filter(lambda i, _: chosen[i])
  return picked.map(lambda _, ex: ex)


def preprocessors(spec: Filter | None, max_pairs: int, seed: int,
                  source: str) -> list[Callable[[tf.data.Dataset],
                                                tf.data.Dataset]]:
  """The seqio preprocessors of a Task over the pairs of `source`; the
  source must carry SCORE when `spec` is bounded."""
  steps = []
  if spec is not None and spec.bounded:
    steps += [functools.partial(keep_in_bounds, lo=spec.lo, hi=spec.hi),
              drop_score]
  if max_pairs:
    steps.append(functools.partial(take_exactly, n=max_pairs, seed=seed,
                                   what=described(spec, source)))
  return steps
