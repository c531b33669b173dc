"""Subword-encoded bitext in length-bucketed batches for seq2seq training.

Batches are a pure function of (seed, step): each epoch shuffles the pairs,
sorts windows of `window` batches by length (less padding), and shuffles the
batch order, so a resumed run sees the batches an uninterrupted run would.
"""
from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Iterator, Sequence
from typing import Literal

import numpy as np

from paraflax import errors
from paraflax.data import batching

PAD, EOS = batching.PAD, 1  # the sentencepiece layout of `sentencepiece_vocab`
BOS = PAD  # decoders start from the padding id (as T5 does)
TooLong = Literal["skip", "truncate", "error"]


def fit_length(ids: list[int], max_len: int, too_long: TooLong, where: str
               ) -> list[int] | None:
  """Applies the over-long policy; `where` names the line for errors."""
  if len(ids) <= max_len:
    return ids
  if too_long == "error":
    raise errors.DataError(
        f"{where}: {len(ids)} subwords, over max_len={max_len}. Raise "
        "data.max_len, or set data.too_long to 'skip' or 'truncate'.")
  return ids[:max_len - 1] + [EOS] if too_long == "truncate" else None


@dataclasses.dataclass(frozen=True)
class EncodedBitext:
  src: tuple[np.ndarray, ...]  # subword ids, EOS-terminated
  tgt: tuple[np.ndarray, ...]

  def __len__(self) -> int:
    return len(self.src)


def encode(pairs: Sequence[tuple[str, str]], src_encode, tgt_encode,
           max_len: int, too_long: TooLong, name: str) -> EncodedBitext:
  """`*_encode(text) -> list[int]` without EOS; pairs over max_len follow
  `too_long` (skipped pairs are counted in the log)."""
  src, tgt, skipped = [], [], 0
  for row, (s, t) in enumerate(pairs, start=1):
    s_ids = fit_length(src_encode(s) + [EOS], max_len, too_long,
                       f"{name} pair {row} (source)")
    t_ids = fit_length(tgt_encode(t) + [EOS], max_len, too_long,
                       f"{name} pair {row} (target)")
    if s_ids is None or t_ids is None:
      skipped += 1
      continue
    src.append(np.asarray(s_ids, np.int32))
    tgt.append(np.asarray(t_ids, np.int32))
  if skipped:
    logging.warning("%s: skipped %d of %d pairs longer than %d subwords",
                    name, skipped, len(pairs), max_len)
  return EncodedBitext(tuple(src), tuple(tgt))


# The length a window is sorted by before it is cut into batches.
# "longer" (the longer side) is what the padded width follows: an NMT batch
# sorted by its targets alone was padded to sources up to 64 long, 1.5x the
# slots. "target" keeps two streams over the same targets in one
# order (the bilingual recipe's pairs and its autoencoded sentences).
SORT_KEYS = {"target": lambda src, tgt: tgt, "longer": max}


@dataclasses.dataclass(eq=False)  # hashed by identity for the epoch cache
class BucketStream:
  data: EncodedBitext
  batch: int
  shards: int = 1
  seed: int = 0
  window: int = 64  # batches sorted together by length
  sort_by: str = "longer"  # a SORT_KEYS name

  @property
  def batches_per_epoch(self) -> int:
    return max(len(self.data) // self.batch, 1)

  @functools.lru_cache(maxsize=2)
  def _epoch(self, epoch: int) -> list[np.ndarray]:
    rng = np.random.default_rng([self.seed, epoch])
    order = rng.permutation(len(self.data))[:self.batches_per_epoch
                                            * self.batch]
    size = self.window * self.batch
    key = SORT_KEYS[self.sort_by]
    batches = []
    for start in range(0, len(order), size):
      chunk = order[start:start + size]
      batches += [chunk[rows] for rows in batching.sorted_chunks(
          [key(len(self.data.src[i]), len(self.data.tgt[i])) for i in chunk],
          self.batch)]
    return [batches[i] for i in rng.permutation(len(batches))]

  def get(self, step: int) -> dict[str, np.ndarray]:
    epoch, index = divmod(step, self.batches_per_epoch)
    rows = self._epoch(epoch)[index]
    padded = batching.round_up(self.batch, self.shards)
    src = [self.data.src[i] for i in rows]
    tgt = [self.data.tgt[i] for i in rows]
    # One width for both sides: 8 step shapes to compile instead of 64.
    longest = max(len(x) for x in src + tgt)
    src, src_len = batching.pad_batch(src, padded, longest)
    tgt_out, tgt_len = batching.pad_batch(tgt, padded, longest)
    tgt_in = np.concatenate([np.full((padded, 1), BOS, np.int32),
                             tgt_out[:, :-1]], axis=1)
    return {"src": src, "src_len": src_len, "tgt_in": tgt_in,
            "tgt_out": tgt_out, "tgt_len": tgt_len}

  def from_step(self, step: int) -> Iterator[dict[str, np.ndarray]]:
    while True:
      yield self.get(step)
      step += 1
