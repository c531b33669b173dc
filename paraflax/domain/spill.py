"""The pivot table step in bounded memory: phrase counts of any number of
blocks turned into p(e2|e1) with only one bucket of phrases in memory.

`pivot_table.write_table` gives the phrase ids, the buckets and the
arithmetic; this module holds the disk side: sorted runs of phrase strings
merged into global ids (`merge_runs`), records appended to bucket files and
read back one bucket at a time (`Buckets`), and the strings of an id read
back without holding the vocabulary (`Strings`). Nothing here grows with
the corpus but files on disk.
"""
from __future__ import annotations

import array
import heapq
import os
from collections.abc import Callable, Iterator, Sequence

import numpy as np

_FLUSH = 1 << 14  # int64s buffered per block of a merge (and offsets)


def write_run(path: str, phrases: list[str]) -> int:
  """A block's phrases sorted, one `local<TAB>phrase` line each (local =
  the phrase's index in `phrases`; phrases never hold a newline).
  Returns how many."""
  count = len(phrases)
  order = np.argsort(np.asarray(phrases, dtype=object), kind="stable")
  with open(path, "w", encoding="utf-8") as f:
    for a in range(0, count, _FLUSH):
      f.writelines(f"{i}\t{phrases[i]}\n" for i in order[a:a + _FLUSH].tolist())
  return count


def _read_run(path: str, block: int) -> Iterator[tuple[str, int, int]]:
  with open(path, encoding="utf-8") as f:
    for line in f:
      local, phrase = line.rstrip("\n").split("\t", 1)
      yield phrase, block, int(local)


def merge_runs(runs: Sequence[str], maps: Sequence[str],
               id_of: Callable[[int, int, int], int],
               on_new: Callable[[str], None] | None = None) -> int:
  """Merges sorted runs (`write_run`) of blocks 0..n-1 by phrase. Each
  distinct phrase gets `id_of(count, block, local)` of its first
  occurrence (the lowest block), `count` the distinct phrases before it;
  `maps[b]` gets int64 (local, id) pairs for every phrase of block b, and
  `on_new` each distinct phrase in order. Returns the distinct count.
  Only the runs stay open; each block buffers `_FLUSH` ids."""
  buffers = [array.array("q") for _ in runs]
  for path in maps:
    open(path, "wb").close()  # pylint: disable=consider-using-with
  count, last, current = 0, None, 0
  for phrase, block, local in heapq.merge(
      *(_read_run(r, b) for b, r in enumerate(runs))):
    if phrase != last:
      current, last = id_of(count, block, local), phrase
      count += 1
      if on_new:
        on_new(phrase)
    buffer = buffers[block]
    buffer.append(local)
    buffer.append(current)
    if len(buffer) >= _FLUSH:
      _flush(maps[block], buffer)
  for path, buffer in zip(maps, buffers):
    _flush(path, buffer)
  return count


def _flush(path: str, buffer: array.array) -> None:
  with open(path, "ab") as f:
    buffer.tofile(f)
  del buffer[:]


def read_map(path: str, size: int) -> np.ndarray:
  """The ids of a block's locals 0..size-1, from `merge_runs`' map."""
  pairs = np.fromfile(path, np.int64).reshape(-1, 2)
  found = np.zeros(size, np.int64)
  found[pairs[:, 0]] = pairs[:, 1]
  return found


class Buckets:
  """Records (a numpy structured dtype) appended to one file per bucket
  and read back a bucket at a time, in the order they were appended."""

  def __init__(self, folder: str, name: str, dtype: np.dtype):
    self.folder, self.name, self.dtype = folder, name, dtype
    self.written: set[int] = set()

  def _path(self, bucket: int) -> str:
    return os.path.join(self.folder, f"{self.name}.{bucket}")

  def append(self, buckets: np.ndarray, records: np.ndarray) -> None:
    """Appends each record to the file of its bucket."""
    if not len(records):
      return
    order = np.argsort(buckets, kind="stable")
    buckets, records = buckets[order], records[order]
    starts = np.flatnonzero(np.r_[True, buckets[1:] != buckets[:-1]])
    for a, b in zip(starts, np.r_[starts[1:], len(buckets)]):
      bucket = int(buckets[a])
      with open(self._path(bucket), "ab") as f:
        f.write(records[a:b].tobytes())
      self.written.add(bucket)

  def read(self, bucket: int) -> np.ndarray:
    """The bucket's records (none if nothing was appended), and its file
    removed: each bucket is read once."""
    if bucket not in self.written:
      return np.zeros(0, self.dtype)
    path = self._path(bucket)
    found = np.fromfile(path, self.dtype)
    os.remove(path)
    return found


class Strings:
  """Phrases written in id order (`add`, then `close`), read back by id
  (`get`, then `release`) with one positioned read each: the vocabulary
  stays on disk."""

  def __init__(self, path: str):
    self._names = (path + ".txt", path + ".offsets")
    self._text, self._offsets = (open(n, "wb") for n in self._names)  # pylint: disable=consider-using-with
    self._at = 0
    self._pending = array.array("q", [0])
    self._fds: tuple[int, int] | None = None

  def add(self, phrase: str) -> None:
    raw = phrase.encode("utf-8")
    self._text.write(raw)
    self._at += len(raw)
    self._pending.append(self._at)
    if len(self._pending) >= _FLUSH:
      self._pending.tofile(self._offsets)
      del self._pending[:]

  def close(self) -> None:
    """Ends the writing; `get` reads from here on."""
    self._pending.tofile(self._offsets)
    self._text.close()
    self._offsets.close()
    self._fds = tuple(os.open(n, os.O_RDONLY) for n in self._names)

  def get(self, ids: np.ndarray) -> dict[int, str]:
    """The phrase of each id."""
    text, offsets = self._fds
    found = {}
    for i in np.unique(ids).tolist():
      start, stop = np.frombuffer(os.pread(offsets, 16, 8 * i), np.int64)
      found[i] = os.pread(text, int(stop - start), int(start)).decode("utf-8")
    return found

  def release(self) -> None:
    for fd in self._fds:
      os.close(fd)
