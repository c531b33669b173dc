"""Padded batches of id sequences, the one way every model here is fed.

Widths are multiples of `QUANTUM` and row counts multiples of the device
count, so few shapes compile and every batch splits over the devices.
Inference walks its inputs once in length-sorted batches: little padding,
and a pure function of the lengths (back-translation resumes by it).
"""
from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Sequence

import numpy as np

PAD = 0  # the padding id of every vocabulary here (words, sentencepiece)
QUANTUM = 8  # widths are multiples of this


def warn_longer(longer: int, total: int, max_len: int, unit: str,
                what: str = "inputs", done: str = "were truncated",
                name: str | None = None) -> None:
  """The one warning of inputs longer than `max_len`: `longer` of `total`
  `what`, and what became of them (`done`); nothing is cut or dropped
  silently. `name` (a corpus) heads the line."""
  if longer:
    logging.warning("%s%d of %d %s are longer than data.max_len=%d %s and %s",
                    f"{name}: " if name else "", longer, total, what, max_len,
                    unit, done)


def report_longer(lengths: Sequence[int], max_len: int, unit: str) -> int:
  """Says how many inputs are longer than `max_len` (and so cut to it):
  nothing is truncated silently. Returns the count."""
  longer = sum(n > max_len for n in lengths)
  warn_longer(longer, len(lengths), max_len, unit)
  return longer


def process_block(batch: int, shards: int, process: tuple[int, int]
                  ) -> tuple[int, int]:
  """(first row, rows) of the block of a batch, padded to `shards`, that
  process (index, count) of a multi-process run reads: the block
  `partitioning.put_batch` places on its devices. Refuses an index outside
  the count and shards that do not split evenly over the processes."""
  index, count = process
  if not 0 <= index < count or shards % count:
    raise ValueError(f"process {index} of {count}: the {shards} batch "
                     "shards must split evenly over the processes.")
  block = round_up(batch, shards) // count
  return index * block, block


def round_up(n: int, multiple: int) -> int:
  return -(-n // multiple) * multiple


def width(longest: int, multiple: int = QUANTUM) -> int:
  """The padded width of a batch whose longest sequence is `longest`: a
  multiple of `multiple`, each width one compiled step shape."""
  return round_up(max(longest, 1), multiple)


def pad_batch(seqs: Sequence[Sequence[int]], rows: int, longest: int = 0,
              multiple: int = QUANTUM) -> tuple[np.ndarray, np.ndarray]:
  """[rows, width] ids (at least `longest` wide, a multiple of `multiple`)
  and [rows] lengths; rows past the sequences are empty."""
  out = np.full((rows, width(max([longest] + [len(s) for s in seqs]),
                             multiple)), PAD, np.int32)
  lengths = np.zeros((rows,), np.int32)
  for i, s in enumerate(seqs):
    out[i, :len(s)] = s
    lengths[i] = len(s)
  return out, lengths


def sorted_chunks(lengths: Sequence[int], size: int) -> list[np.ndarray]:
  """Indices by ascending length (ties in input order), `size` at a time."""
  order = np.argsort(np.asarray(lengths), kind="stable")
  return [order[i:i + size] for i in range(0, len(order), size)]


def sorted_batches(seqs: Sequence[Sequence[int]], size: int,
                   multiple: int = 1, width_multiple: int = QUANTUM
                   ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
  """(indices, ids, lengths) of every sequence once, by `sorted_chunks`.

  Every batch has `size` rows rounded up to a `multiple` (the device count):
  a short last batch is padded too, so one shape compiles per width (a
  multiple of `width_multiple`).
  """
  rows = round_up(size, multiple)
  for chunk in sorted_chunks([len(s) for s in seqs], size):
    ids, lengths = pad_batch([seqs[i] for i in chunk], rows, 0,
                             width_multiple)
    yield chunk, ids, lengths


def epoch_indices(n: int, size: int, seed: int, start_step: int
                  ) -> Iterator[np.ndarray]:
  """Row indices of `size`-row batches over `n` examples from batch
  `start_step` on, epoch after epoch, each epoch in its own order drawn from
  (seed, epoch): a resumed run sees the batches an uninterrupted one would.
  The last batch of an epoch may be short."""
  per_epoch = math.ceil(n / size)
  epoch, index = divmod(start_step, per_epoch)
  while True:
    order = np.random.default_rng((seed, epoch)).permutation(n)
    for start in range(index * size, n, size):
      yield order[start:start + size]
    epoch, index = epoch + 1, 0
