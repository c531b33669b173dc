"""External binning by keys: lines cut into bins of equal size by the rank
of a uint64 key, the ties broken by line, without the keys of the whole
corpus in memory.

The keys are written as consecutive sorted runs on disk (a memmap); the
key at each bin boundary comes from a bisection over the 64 key bits
(`kth_keys`), one binary search per run, and `Binner` then gives each key
streamed in line order its bin. `sortable` orders float64 values as
uint64 keys; `random_keys` gives a random order of the lines that a block
of lines gets without the others.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_SIGN = np.uint64(1 << 63)


def sortable(values: np.ndarray) -> np.ndarray:
  """uint64 keys in the order of the float64 `values` (no NaN)."""
  bits = np.ascontiguousarray(values, np.float64).view(np.uint64)
  return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def random_keys(lines: np.ndarray, seed: int) -> np.ndarray:
  """A pseudo-random uint64 per 0-based line (splitmix64 of the line and
  the seed): sorting by it is a random order of the lines that a block
  of lines gets without the others."""
  z = lines.astype(np.uint64) + np.uint64(seed) * np.uint64(1 << 40)
  with np.errstate(over="ignore"):
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
  return z ^ (z >> np.uint64(31))


def bin_starts(count: int, bins: int) -> list[int]:
  """The 0-based rank at which bin 2..bins starts: sizes differ by at most
  one, the larger bins first."""
  size, extra = divmod(count, bins)
  return [i * size + min(i, extra) for i in range(1, bins)]


def _count_le(runs: np.ndarray, run: int, keys: np.ndarray) -> np.ndarray:
  """How many of `runs` are <= each key: one binary search per run."""
  total = np.zeros(len(keys), np.int64)
  for a in range(0, len(runs), run):
    total += np.searchsorted(runs[a:a + run], keys, side="right")
  return total


def kth_keys(runs: np.ndarray, run: int, ranks: Sequence[int]) -> np.ndarray:
  """The key of 0-based rank k for each k in `ranks`, `runs` being keys in
  consecutive sorted runs of `run` (a memmap: only their searched pages are
  read). A bisection over the 64 key bits, all ranks at once."""
  want = np.asarray(ranks, np.int64) + 1
  lo = np.zeros(len(want), np.uint64)
  hi = np.full(len(want), np.iinfo(np.uint64).max, np.uint64)
  while np.any(lo < hi):
    mid = lo + (hi - lo) // np.uint64(2)
    enough = _count_le(runs, run, mid) >= want
    hi = np.where(enough, mid, hi)
    lo = np.where(enough, lo, mid + np.uint64(1))
  return lo


class Binner:
  """Bins of keys streamed in line order, the ranks broken by line: a key
  goes below boundary b if it is less than the boundary's key, or equal
  to it and among the first `need[b]` such keys."""

  def __init__(self, runs: np.ndarray, run: int, starts: Sequence[int]):
    self.keys = kth_keys(runs, run, starts)
    positive = self.keys > 0
    below = _count_le(runs, run, np.where(positive, self.keys - 1, 0)
                      .astype(np.uint64)) * positive  # keys < each key
    self.need = np.asarray(starts, np.int64) - below
    self.seen = np.zeros(len(starts), np.int64)

  def __call__(self, keys: np.ndarray) -> np.ndarray:
    """1-based bins of the next keys in line order."""
    lt = keys[:, None] < self.keys[None, :]
    eq = keys[:, None] == self.keys[None, :]
    taken = self.seen + np.cumsum(eq, axis=0)
    below = lt | (eq & (taken <= self.need))
    self.seen += eq.sum(axis=0)
    return 1 + np.sum(~below, axis=1)
