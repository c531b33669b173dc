"""Encoded training data on disk, read back a row at a time.

A recipe streams its corpus once through its vocabulary into a folder of
numpy arrays (`ensure`): each column is a raw little-endian file written
chunk by chunk, so memory stays flat in the corpus size, and
`settings.json`, written last, holds what the arrays were made from (the
data files' sizes and times, the vocabulary's digest, max_len, ...) and
their row count. The folder is built under a temporary name and renamed
whole: a kill at any moment leaves either the finished folder or a
`.partial-*` one that the next build removes. A later run with the same
settings reads the arrays (`Rows`: the rows a batch indexes, read
from the files); other settings (the data or the vocabulary changed) rebuild
them.

Columns are fixed-width (`[rows, width]`, or `[rows]` with width 0) or
ragged (`ragged=True`: one flat id file and `[rows + 1]` offsets).
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from paraflax import faults
from paraflax import files

SETTINGS = "settings.json"
_PARTIAL = ".partial-"


@dataclasses.dataclass(frozen=True)
class Column:
  dtype: str  # a numpy dtype name
  width: int = 0  # 0: one value per row
  ragged: bool = False  # variable-length rows: `name` flat, `name.offsets`


def row_hash(ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
  """[N] int64: a 64-bit digest of each row's first `lengths` ids: equal
  for equal sequences, and (to 2^-64 per pair of rows) only for them."""
  ids = np.ascontiguousarray(ids, np.int32)
  out = np.empty(len(ids), np.int64)
  for row, n in enumerate(lengths):
    digest = hashlib.blake2b(ids[row, :n].tobytes(), digest_size=8).digest()
    out[row] = int.from_bytes(digest, "little", signed=True)
  return out


def file_stamp(paths: Iterable[str]) -> list[list]:
  """(absolute path, size, mtime in ns) of each file: what a cache of them
  compares to notice that the data changed."""
  out = []
  for path in paths:
    path = os.path.abspath(os.fspath(path))
    st = os.stat(path)
    out.append([path, st.st_size, st.st_mtime_ns])
  return out


def digest(lines: Iterable[str]) -> str:
  h = hashlib.sha256()
  for line in lines:
    h.update(line.encode("utf-8", "surrogatepass") + b"\n")
  return h.hexdigest()


class Writer:
  """Appends chunks of rows to the column files of a folder."""

  def __init__(self, folder: str, columns: Mapping[str, Column]):
    self.columns = dict(columns)
    self.rows = 0
    self._files = {}
    self._offsets = {}
    for name, col in self.columns.items():
      self._files[name] = open(os.path.join(folder, name), "wb")
      if col.ragged:
        self._files[name + ".offsets"] = open(
            os.path.join(folder, name + ".offsets"), "wb")
        self._offsets[name] = 0
        self._files[name + ".offsets"].write(np.zeros(1, np.int64).tobytes())

  def append(self, chunk: Mapping[str, Any]) -> None:
    """Rows of every column: arrays (or, ragged, sequences of arrays)."""
    counts = {len(v) for v in chunk.values()}
    if chunk.keys() != self.columns.keys() or len(counts) != 1:
      raise ValueError(f"a chunk of {sorted(chunk)} with row counts {counts}"
                       f"; expected every column of {sorted(self.columns)}")
    for name, col in self.columns.items():
      value = chunk[name]
      if col.ragged:
        lengths = np.asarray([len(v) for v in value], np.int64)
        flat = np.concatenate([np.asarray(v, col.dtype) for v in value]) \
            if len(value) else np.zeros(0, col.dtype)
        ends = self._offsets[name] + np.cumsum(lengths)
        self._offsets[name] = int(ends[-1]) if len(ends) else \
            self._offsets[name]
        self._files[name].write(flat.astype(col.dtype).tobytes())
        self._files[name + ".offsets"].write(ends.tobytes())
      else:
        array = np.ascontiguousarray(value, col.dtype)
        shape = (len(value), col.width) if col.width else (len(value),)
        if array.shape != shape:
          raise ValueError(f"column {name}: shape {array.shape}, expected "
                           f"{shape}")
        self._files[name].write(array.tobytes())
    self.rows += counts.pop()
    faults.moment("data_cache.chunk")

  def close(self) -> None:
    for f in self._files.values():
      f.flush()
      os.fsync(f.fileno())
      f.close()


class Cache(Mapping[str, Any]):
  """The columns of a finished folder: `Rows` of the files, or for a
  ragged column a `Ragged`; `info` is what the builder recorded."""

  def __init__(self, folder: str, saved: dict):
    self.folder, self.rows, self.info = folder, saved["rows"], saved["info"]
    self._columns = {n: Column(**c) for n, c in saved["columns"].items()}

  def __getitem__(self, name: str):
    col = self._columns[name]
    path = os.path.join(self.folder, name)
    if col.ragged:
      offsets = Rows(path + ".offsets", np.dtype("int64"), (self.rows + 1,))
      total = int(offsets.span(self.rows, self.rows + 1)[0])
      return Ragged(Rows(path, np.dtype(col.dtype), (total,)), offsets)
    shape = (self.rows, col.width) if col.width else (self.rows,)
    return Rows(path, np.dtype(col.dtype), shape)

  def __iter__(self):
    return iter(self._columns)

  def __len__(self) -> int:
    return len(self._columns)


class Rows:
  """A fixed-width column file whose rows are read when indexed (`pread`):
  memory holds the rows read, not the pages a memory map would bring
  around them (a map's fault-around makes every scattered row cost 64 KiB
  of resident file pages)."""

  def __init__(self, path: str, dtype: np.dtype, shape: tuple[int, ...]):
    self.path, self.dtype, self.shape = path, dtype, shape
    self._row = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
    self._fd = os.open(path, os.O_RDONLY) if shape[0] else None

  def __len__(self) -> int:
    return self.shape[0]

  def __getitem__(self, idx) -> np.ndarray:
    idx = np.asarray(idx, np.int64)
    flat = idx.reshape(-1)
    out = np.empty((len(flat),) + self.shape[1:], self.dtype)
    for j in np.argsort(flat, kind="stable"):  # forward through the file
      row = int(flat[j])
      if not 0 <= row < self.shape[0]:
        raise IndexError(f"row {row} of {self.shape[0]} in {self.path}")
      out[j] = np.frombuffer(os.pread(self._fd, self._row, row * self._row),
                             self.dtype).reshape(self.shape[1:])
    return out.reshape(idx.shape + self.shape[1:])

  def span(self, start: int, stop: int) -> np.ndarray:
    """Rows start..stop - 1 in one read."""
    if not 0 <= start <= stop <= self.shape[0]:
      raise IndexError(f"rows {start}..{stop} of {self.shape[0]} in "
                       f"{self.path}")
    if start == stop:
      return np.zeros((0,) + self.shape[1:], self.dtype)
    raw = os.pread(self._fd, (stop - start) * self._row, start * self._row)
    return np.frombuffer(raw, self.dtype).reshape((stop - start,)
                                                  + self.shape[1:])

  def __array__(self, dtype=None, copy=None) -> np.ndarray:
    del copy
    whole = np.fromfile(self.path, self.dtype).reshape(self.shape) \
        if self.shape[0] else np.zeros(self.shape, self.dtype)
    return whole if dtype is None else whole.astype(dtype)

  def __del__(self):
    if getattr(self, "_fd", None) is not None:
      os.close(self._fd)


@dataclasses.dataclass(frozen=True)
class Ragged:
  """Variable-length rows, read when indexed as `Rows` are: row i is
  flat[offsets[i]:offsets[i + 1]]."""
  flat: Rows
  offsets: Rows  # [rows + 1] int64

  def __len__(self) -> int:
    return len(self.offsets) - 1

  def __getitem__(self, row: int) -> np.ndarray:
    start, stop = self.offsets.span(row, row + 2)
    return self.flat.span(int(start), int(stop))

  def lengths(self, rows: np.ndarray) -> np.ndarray:
    """[len(rows)] the lengths of `rows`."""
    return np.asarray([np.diff(self.offsets.span(r, r + 2))[0]
                       for r in rows], np.int64)


def _read_settings(folder: str) -> dict | None:
  try:
    with open(os.path.join(folder, SETTINGS), encoding="utf-8") as f:
      return json.load(f)
  except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError):
    return None


def _alive(pid: int) -> bool:
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  except PermissionError:
    return True
  return True


def _remove_dead_partials(folder: str) -> None:
  """Removes the partial builds of `folder` that processes of this host
  left when they were killed (a live builder's stays)."""
  parent, base = os.path.split(folder)
  host = socket.gethostname()
  for name in os.listdir(parent or "."):
    if not name.startswith(base + _PARTIAL):
      continue
    owner, _, pid = name[len(base + _PARTIAL):].rpartition("-")
    if owner == host and pid.isdigit() and not _alive(int(pid)):
      shutil.rmtree(os.path.join(parent, name), ignore_errors=True)


def ensure(folder: str, settings: Mapping[str, Any],
           columns: Mapping[str, Column],
           fill: Callable[[Writer], Mapping[str, Any]]) -> Cache:
  """The cache in `folder` made with `settings`, built by `fill` (which
  appends every row to the writer and returns the `info` to record) when
  it is missing or was made with other settings."""
  folder = os.path.abspath(folder)
  settings = json.loads(json.dumps(settings))  # as it reads back
  spec = {n: dataclasses.asdict(c) for n, c in columns.items()}
  saved = _made_with(folder, settings, spec)
  if saved is not None:
    return Cache(folder, saved)
  # The processes of a run that share the folder (one host's, or all on a
  # shared filesystem) build it once: the others wait, then read it.
  with files.waiting_lock(folder + ".lock"):
    saved = _made_with(folder, settings, spec)
    return Cache(folder, saved) if saved is not None else \
        _build(folder, settings, spec, columns, fill)


def _made_with(folder: str, settings: Any, spec: dict) -> dict | None:
  """The record of the finished cache in `folder` if it was made with
  `settings` and columns `spec`."""
  saved = _read_settings(folder)
  ok = saved is not None and saved["settings"] == settings \
      and saved["columns"] == spec
  return saved if ok else None


def _build(folder: str, settings: Mapping[str, Any], spec: dict,
           columns: Mapping[str, Column],
           fill: Callable[[Writer], Mapping[str, Any]]) -> Cache:
  _remove_dead_partials(folder)
  partial = f"{folder}{_PARTIAL}{socket.gethostname()}-{os.getpid()}"
  shutil.rmtree(partial, ignore_errors=True)
  os.makedirs(partial)
  try:
    writer = Writer(partial, columns)
    try:
      info = fill(writer)
    finally:
      writer.close()
    record = {"settings": settings, "columns": spec, "rows": writer.rows,
              "info": dict(info)}
    with open(os.path.join(partial, SETTINGS), "w", encoding="utf-8") as f:
      json.dump(record, f, indent=1, sort_keys=True)
      f.flush()
      os.fsync(f.fileno())
    faults.moment("data_cache.written")
    _install(partial, folder, record)
  except BaseException:
    shutil.rmtree(partial, ignore_errors=True)
    raise
  faults.moment("data_cache.renamed")
  return Cache(folder, json.loads(json.dumps(record)))


def _install(partial: str, folder: str, record: dict) -> None:
  """Renames the finished `partial` to `folder`, replacing a cache of other
  settings; another process that installed the same first wins."""
  old = f"{folder}{_PARTIAL}{socket.gethostname()}-{os.getpid()}-old"
  for _ in range(3):
    saved = _read_settings(folder)
    if saved == json.loads(json.dumps(record)):
      shutil.rmtree(partial, ignore_errors=True)
      return
    if os.path.exists(folder):
      with contextlib.suppress(FileNotFoundError, OSError):
        os.rename(folder, old)
      shutil.rmtree(old, ignore_errors=True)
    with contextlib.suppress(FileExistsError, OSError):
      os.rename(partial, folder)
      return
  raise OSError(f"{folder}: could not install the encoded data (another "
                "process keeps replacing it); rerun.")


FOLDER = "data_cache"  # in the workdir


def folder(workdir: str, name: str) -> str:
  """Where a run's encoded data `name` lives: the workdir's `data_cache/`,
  or for a workdir that is no local path (gs://...) a folder of the
  user's cache (PARAFLAX_DATA_CACHE, by default ~/.cache/paraflax/data)
  named after the workdir: the rows are read from local files."""
  if "://" not in workdir:
    return os.path.join(os.path.abspath(workdir), FOLDER, name)
  root = files.user_cache("PARAFLAX_DATA_CACHE", "data") or \
      os.path.join(tempfile.gettempdir(), "paraflax-data")
  key = hashlib.sha256(workdir.encode()).hexdigest()[:16]
  return os.path.join(root, key, name)


def stamp_of(names: Sequence[str]) -> list[list]:
  """`file_stamp` of the files that exist among `names` (others by name)."""
  return [file_stamp([n])[0] if os.path.isfile(n) else [n] for n in names]
