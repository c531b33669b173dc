"""Subword-encoded bitext in length-bucketed batches for seq2seq training.

Batches are a pure function of (seed, step): each epoch shuffles the pairs,
sorts windows of `window` batches by length (less padding), and shuffles the
batch order, so a resumed run sees the batches an uninterrupted run would.
The pairs are in memory (`encode`) or read by row from the workdir's
encoded cache (`cached`); a batch reads the lengths of its window's pairs
and its own rows, so memory holds the epoch's order (4 bytes a pair), not
the corpus.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Literal

import numpy as np

from paraflax import errors
from paraflax.data import batching
from paraflax.data import encoded_cache

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
  """Subword ids, EOS-terminated, row by row: in memory (`encode`), or
  read by row from the workdir's encoded cache (`cached`)."""
  src: Sequence[np.ndarray]
  tgt: Sequence[np.ndarray]

  def __len__(self) -> int:
    return len(self.src)


def lengths(rows_of: Sequence[np.ndarray], rows: np.ndarray) -> np.ndarray:
  """[len(rows)] the lengths of `rows` of `rows_of`: from the cache's
  offsets (`encoded_cache.Ragged`, `Chained`), else of the arrays."""
  if hasattr(rows_of, "lengths"):
    return rows_of.lengths(rows)
  return np.asarray([len(rows_of[i]) for i in rows], np.int64)


@dataclasses.dataclass(frozen=True)
class Chained:
  """The rows of `first`, then those of `second`, as one sequence (the
  bilingual recipe's bitext targets, then its monolingual sentences)."""
  first: Sequence[np.ndarray]
  second: Sequence[np.ndarray]

  def __len__(self) -> int:
    return len(self.first) + len(self.second)

  def __getitem__(self, row: int) -> np.ndarray:
    n = len(self.first)
    return self.first[row] if row < n else self.second[row - n]

  def lengths(self, rows: np.ndarray) -> np.ndarray:
    rows, n = np.asarray(rows), len(self.first)
    out = np.empty(len(rows), np.int64)
    ahead = rows < n
    out[ahead] = lengths(self.first, rows[ahead])
    out[~ahead] = lengths(self.second, rows[~ahead] - n)
    return out


def _encode_rows(pairs: Sequence[tuple[str, str]], src_encode, tgt_encode,
                 max_len: int, too_long: TooLong, name: str, first: int
                 ) -> tuple[list[np.ndarray], list[np.ndarray], int]:
  """The kept pairs' (source ids, target ids) and how many were skipped;
  `first` is the number of the first pair in messages."""
  src, tgt, skipped = [], [], 0
  for row, (s, t) in enumerate(pairs, start=first):
    s_ids = fit_length(src_encode(s) + [EOS], max_len, too_long,
                       f"{name} pair {row} (source)")
    t_ids = fit_length(tgt_encode(t) + [EOS], max_len, too_long,
                       f"{name} pair {row} (target)")
    if s_ids is None or t_ids is None:
      skipped += 1
      continue
    src.append(np.asarray(s_ids, np.int32))
    tgt.append(np.asarray(t_ids, np.int32))
  return src, tgt, skipped


def _report_skipped(name: str, skipped: int, total: int, max_len: int
                    ) -> None:
  batching.warn_longer(skipped, total, max_len, "subwords", "pairs",
                       "were skipped (a larger data.max_len keeps them)",
                       name)


def encode(pairs: Sequence[tuple[str, str]], src_encode, tgt_encode,
           max_len: int, too_long: TooLong, name: str) -> EncodedBitext:
  """`*_encode(text) -> list[int]` without EOS; pairs over max_len follow
  `too_long` (skipped pairs are counted in the log)."""
  src, tgt, skipped = _encode_rows(pairs, src_encode, tgt_encode, max_len,
                                   too_long, name, 1)
  _report_skipped(name, skipped, len(pairs), max_len)
  return EncodedBitext(tuple(src), tuple(tgt))


SIDES = ("src", "tgt")


def cached(folder: str, settings: dict, chunks: Callable[
    [], Iterator[Sequence[tuple[str, str]]]], src_encode, tgt_encode,
           max_len: int, too_long: TooLong, name: str,
           sides: Sequence[str] = SIDES) -> encoded_cache.Cache:
  """`encode` of the pairs of `chunks()` (called once, only when the cache
  in `folder` is missing or of other `settings`) into `folder`, the
  columns of `sides` kept; read back by row (`encoded_cache.Ragged`)."""

  def fill(writer: encoded_cache.Writer) -> dict:
    total = skipped = 0
    for chunk in chunks():
      src, tgt, n = _encode_rows(chunk, src_encode, tgt_encode, max_len,
                                 too_long, name, total + 1)
      writer.append({side: ids for side, ids in zip(SIDES, (src, tgt))
                     if side in sides})
      total, skipped = total + len(chunk), skipped + n
    _report_skipped(name, skipped, total, max_len)
    return {"pairs": total, "skipped": skipped}

  return encoded_cache.ensure(
      folder, settings,
      {side: encoded_cache.Column("int32", ragged=True) for side in sides},
      fill)


def width_multiple(config) -> int:
  """`data.width_multiple`, checked: what the widths of train batches and
  of decoded or embedded inputs are multiples of."""
  multiple = config.data.width_multiple
  if not isinstance(multiple, int) or multiple < 1:
    raise errors.ConfigError(
        f"data.width_multiple={multiple!r}: a positive number of subwords "
        f"(default {batching.QUANTUM}; data.max_len for one width).")
  return multiple


# The length a window is sorted by before it is cut into batches.
# "longer" (the longer side) is what the padded width follows: NMT batches
# sorted by their targets alone are padded to sources up to 64 long, 1.4x
# the slots of configs/nmt.py:de's (lab/benchmarks/batch_padding.py). "target" keeps two streams over the same targets in one
# order (the bilingual recipe's pairs and its autoencoded sentences).
SORT_KEYS = {"target": lambda src, tgt: tgt, "longer": np.maximum}


def padded_batch(src: Sequence[np.ndarray], tgt: Sequence[np.ndarray],
                 rows: int, longest: int, multiple: int
                 ) -> dict[str, np.ndarray]:
  """A train batch of `rows` rows (empty past the pairs given), both sides
  at least `longest` wide, the decoder's input the target after BOS."""
  src_ids, src_len = batching.pad_batch(src, rows, longest, multiple)
  tgt_out, tgt_len = batching.pad_batch(tgt, rows, longest, multiple)
  tgt_in = np.concatenate([np.full((rows, 1), BOS, np.int32),
                           tgt_out[:, :-1]], axis=1)
  return {"src": src_ids, "src_len": src_len, "tgt_in": tgt_in,
          "tgt_out": tgt_out, "tgt_len": tgt_len}


@dataclasses.dataclass(eq=False)  # hashed by identity for the epoch cache
class BucketStream:
  data: EncodedBitext
  batch: int
  shards: int = 1
  seed: int = 0
  window: int = 64  # batches sorted together by length
  sort_by: str = "longer"  # a SORT_KEYS name
  width_multiple: int = batching.QUANTUM  # batch widths are multiples
  # (index, count): a process of a multi-process run reads and pads only
  # its block of each batch's rows (the block `partitioning.put_batch`
  # places on its devices); the width is the whole batch's.
  process: tuple[int, int] = (0, 1)
  # The part of the training pairs these are (`bitext_parts`): its own
  # order, drawn from (seed, part, epoch); None: (seed, epoch).
  part: int | None = None

  def __post_init__(self):
    batching.process_block(self.batch, self.shards, self.process)

  @property
  def batches_per_epoch(self) -> int:
    return max(len(self.data) // self.batch, 1)

  @functools.lru_cache(maxsize=2)
  def _epoch(self, epoch: int) -> tuple[np.ndarray, np.ndarray]:
    """The epoch's pairs in its order, cut to whole batches (4 bytes a
    pair), and its order of batches."""
    rng = np.random.default_rng([self.seed, epoch] if self.part is None
                                else [self.seed, self.part, epoch])
    n = len(self.data)
    order = np.arange(n, dtype=np.int32 if n < 2**31 else np.int64)
    rng.shuffle(order)  # rng.permutation(n)'s draws, in 4 bytes a pair
    return (order[:self.batches_per_epoch * self.batch],
            rng.permutation(self.batches_per_epoch))

  @functools.lru_cache(maxsize=64)
  def _window(self, epoch: int, window: int) -> list[np.ndarray]:
    """The batches of one window of the epoch's order, sorted by length:
    only its pairs' lengths are read."""
    size = self.window * self.batch
    chunk = self._epoch(epoch)[0][window * size:(window + 1) * size]
    key = SORT_KEYS[self.sort_by](lengths(self.data.src, chunk),
                                  lengths(self.data.tgt, chunk))
    return [chunk[rows] for rows in batching.sorted_chunks(key, self.batch)]

  def rows(self, step: int) -> np.ndarray:
    """The pairs of batch `step`: the epoch's batches are its windows'
    (each `window` batches), taken in the epoch's order of batches."""
    epoch, index = divmod(step, self.batches_per_epoch)
    window, k = divmod(int(self._epoch(epoch)[1][index]), self.window)
    return self._window(epoch, window)[k]

  def get(self, step: int) -> dict[str, np.ndarray]:
    """Batch `step`, or this process's block of its rows."""
    rows = self.rows(step)
    start, block = batching.process_block(self.batch, self.shards,
                                          self.process)
    # One width for both sides, from the whole batch's lengths (the cache's
    # offsets): max_len / width_multiple step shapes to compile (8 at the
    # defaults) instead of their square, the same on every process.
    longest = int(max(lengths(self.data.src, rows).max(),
                      lengths(self.data.tgt, rows).max()))
    mine = rows[start:start + block]
    return padded_batch([self.data.src[i] for i in mine],
                        [self.data.tgt[i] for i in mine], block, longest,
                        self.width_multiple)

  def from_step(self, step: int) -> Iterator[dict[str, np.ndarray]]:
    while True:
      yield self.get(step)
      step += 1
