"""LASER's embedding files: a raw little-endian N x d matrix, no header.

float32 by default, float16 for LASER's `--fp16` files. Files are memory
mapped, so a corpus bigger than RAM is read one block at a time. The raw
format stays LASER's for interchange; the files paraflax writes get a
sidecar, `FILE.info.json` (rows, dim, dtype), which every read checks, so a
file read with the wrong --dim or --fp16 stops instead of giving other
rows; with a sidecar, --dim may be left out.
"""
from __future__ import annotations

import glob
import hashlib
import json
import os

import numpy as np

from paraflax import errors
from paraflax import files
from paraflax.mining import knn


def dtype(fp16: bool) -> np.dtype:
  return np.dtype("<f2" if fp16 else "<f4")


def info_path(path: str) -> str:
  """The sidecar that says what `path` holds."""
  return path + ".info.json"


def _info(path: str) -> dict | None:
  try:
    with open(info_path(path), encoding="utf-8") as f:
      info = json.load(f)
  except FileNotFoundError:
    return None
  except (ValueError, UnicodeDecodeError) as e:
    raise errors.DataError(f"{info_path(path)}: not the JSON paraflax "
                           f"writes ({e}); remove it to read {path} as a "
                           "raw file with --dim.") from e
  if not (isinstance(info, dict) and isinstance(info.get("rows"), int)
          and isinstance(info.get("dim"), int)
          and info.get("dtype") in ("float16", "float32")):
    raise errors.DataError(f"{info_path(path)}: lacks rows, dim and dtype "
                           f"(float16 or float32); remove it to read {path} "
                           "as a raw file with --dim.")
  return info


_ENDS = 1 << 20  # bytes of each end of the matrix the sidecar's digest covers


def _ends_digest(size: int, head: bytes, tail: bytes) -> str:
  """The digest of a matrix's size and both ends: the sidecar records it,
  so a file replaced under its sidecar (by another of the same size,
  too) is not read by the other's shape."""
  return hashlib.sha256(f"{size}:".encode() + head + tail).hexdigest()


def _file_ends_digest(path: str, size: int) -> str:
  with open(path, "rb") as f:
    head = f.read(_ENDS)
    f.seek(max(0, size - _ENDS))
    return _ends_digest(size, head, f.read(_ENDS))


def _check_info(path: str, info: dict, dim: int | None, fp16: bool,
                size: int) -> None:
  """`info` (the sidecar) against the flags given and the file's size."""
  given = dtype(fp16).name
  if info["dtype"] != given:
    flag = "pass --fp16" if info["dtype"] == "float16" else "drop --fp16"
    raise errors.DataError(f"{path} holds {info['dtype']} (says "
                           f"{info_path(path)}), not {given}: {flag}.")
  if dim is not None and dim != info["dim"]:
    raise errors.DataError(f"{path} holds embeddings of dim {info['dim']} "
                           f"(says {info_path(path)}), not {dim}: pass "
                           f"--dim {info['dim']}, or leave --dim out.")
  if size != info["rows"] * info["dim"] * dtype(fp16).itemsize:
    raise errors.DataError(
        f"{path}: {size} bytes, but {info_path(path)} says {info['rows']} "
        f"rows of dim {info['dim']} ({info['dtype']}): the file changed "
        "after it was written (cut short, or appended to). Embed the text "
        "again.")
  if "ends" in info and info["ends"] != _file_ends_digest(path, size):
    raise errors.DataError(
        f"{path}: not the matrix {info_path(path)} describes (the file was "
        "replaced after it was written, though its size matches). Embed "
        "the text again, or remove the sidecar to read the file as a raw "
        "one with --dim.")


def read(path: str, dim: int | None, *, fp16: bool = False) -> np.ndarray:
  """The [N, dim] matrix of `path`, memory-mapped, with finite rows; `dim`
  None takes it from the file's sidecar."""
  if not os.path.isfile(path):
    raise errors.DataError(f"{path}: embedding file not found. Check the "
                           "path (or embed the text first: paraflax embed).")
  info = _info(path)
  size = os.path.getsize(path)
  if info is not None:
    _check_info(path, info, dim, fp16, size)
    dim = info["dim"]
  if dim is None:
    raise errors.ConfigError(f"--dim is required: {path} is a raw LASER "
                             f"file without {os.path.basename(info_path(path))}"
                             " to say its dimension.")
  if dim < 1:
    raise errors.ConfigError(f"--dim {dim}: the embedding dimension must be "
                             "positive.")
  kind = dtype(fp16)
  row_bytes = dim * kind.itemsize
  if size == 0:
    raise errors.DataError(f"{path}: empty file, no embeddings to mine.")
  if size % row_bytes:
    other = "without --fp16" if fp16 else "with --fp16"
    raise errors.DataError(
        f"{path}: {size} bytes is not a whole number of rows of dim {dim} "
        f"x {kind.itemsize} bytes ({kind.name}). Check --dim, or pass the "
        f"file {other} if it holds {'float32' if fp16 else 'float16'}; "
        "otherwise the file is truncated.")
  emb = np.memmap(path, dtype=kind, mode="r", shape=(size // row_bytes, dim))
  return knn.as_embeddings(emb, path)


def write(path: str, emb: np.ndarray, *, fp16: bool = False,
          overwrite: bool = False) -> bool:
  """Writes `emb` as LASER does, with its sidecar, atomically, so no
  half-written file; False when `path` holds these very embeddings
  already. Other contents of `path` are refused (a `ConfigError`) unless
  `overwrite`."""
  matrix = np.ascontiguousarray(emb, dtype(fp16))
  rows, dim = matrix.shape
  data = matrix.tobytes()
  info = {"format": "LASER raw: little-endian row-major, no header",
          "rows": rows, "dim": dim, "dtype": matrix.dtype.name,
          "ends": _ends_digest(len(data), data[:_ENDS], data[-_ENDS:])}
  return files.write_all_once(
      {path: data,
       info_path(path): json.dumps(info, indent=2) + "\n"},
      overwrite=overwrite)


fingerprint = files.fingerprint


# --- Sharded corpora --------------------------------------------------------


def expand(patterns: str, what: str) -> list[str]:
  """The files that a path, a glob, or a comma-separated list of them
  names, each once, sorted by path: shards given in any order are read in
  one order, so their rows (and line numbers) are the same whichever way
  they were listed."""
  paths = set()
  for pattern in patterns.split(","):
    found = ({os.path.normpath(p) for p in glob.glob(pattern)}
             if glob.has_magic(pattern) else {os.path.normpath(pattern)})
    if not found:
      raise errors.DataError(f"{pattern}: no {what} matches this pattern. "
                             "Check the path (quote the glob so that the "
                             "shell passes it on).")
    paths |= found
  return sorted(paths)


def take_rows(matrix: np.ndarray, rows: np.ndarray) -> np.ndarray:
  """matrix[rows] for an int array `rows`: np.take copies whole rows
  2 to 3 times as fast as fancy indexing does."""
  return np.take(matrix, rows, axis=0)


class Shards:
  """The rows of several embedding files, in order, as one [rows, dim]
  matrix that can be sliced (`s[a:b]`) and gathered (`s[int array]`);
  every file stays memory-mapped, and only what is read is copied."""

  def __init__(self, paths: list[str], parts: list[np.ndarray]):
    self.paths, self.parts = paths, parts
    self.starts = np.cumsum([0] + [len(p) for p in parts])
    self.shape = (int(self.starts[-1]), parts[0].shape[1])
    self.dtype = parts[0].dtype
    self.ndim = 2

  def __len__(self) -> int:
    return self.shape[0]

  def shard_rows(self, i: int) -> tuple[int, int]:
    """Rows [start, stop) of the whole that shard i holds."""
    return int(self.starts[i]), int(self.starts[i + 1])

  def __getitem__(self, key):
    if isinstance(key, slice):
      start, stop, step = key.indices(len(self))
      if step != 1:
        return self[np.arange(start, stop, step)]
      pieces = []
      for part, first in zip(self.parts, self.starts[:-1]):
        lo, hi = max(start - first, 0), min(stop - first, len(part))
        if lo < hi:
          pieces.append(part[lo:hi])
      if len(pieces) == 1:
        return pieces[0]
      return (np.concatenate(pieces) if pieces
              else np.zeros((0, self.shape[1]), self.dtype))
    rows = np.asarray(key)
    if rows.ndim == 0:
      return self[int(rows):int(rows) + 1][0]
    flat = rows.ravel().astype(np.int64)
    if flat.size and (flat.min() < 0 or flat.max() >= len(self)):
      raise IndexError(f"rows out of range 0..{len(self) - 1}")
    order = np.argsort(flat)  # in file order: fewer seeks
    ordered = flat[order]
    bounds = np.searchsorted(ordered, self.starts)  # each shard's run
    found = np.empty((flat.size, self.shape[1]), self.dtype)
    for part, first, lo, hi in zip(self.parts, self.starts, bounds[:-1],
                                   bounds[1:]):
      if lo < hi:  # rows checked above: "clip" copies unbuffered
        np.take(part, ordered[lo:hi] - first, axis=0, out=found[lo:hi],
                mode="clip")
    back = np.empty_like(order)
    back[order] = np.arange(order.size)
    return take_rows(found, back).reshape(rows.shape + (self.shape[1],))

  def __array__(self, dtype=None, copy=None):
    del copy  # always a copy: the shards are separate files
    whole = np.concatenate(self.parts)
    return whole if dtype is None else whole.astype(dtype)


def read_shards(pattern: str, dim: int | None, *, fp16: bool = False
                ) -> tuple[np.ndarray | Shards, list[str]]:
  """The embeddings of the files a path or glob names (sorted by path),
  each checked as `read`, of one dimension; one file as `read` gives it,
  several as `Shards`. Also the paths."""
  paths = expand(pattern, "embedding file")
  parts = [read(path, dim, fp16=fp16) for path in paths]
  for path, part in zip(paths[1:], parts[1:]):
    if part.shape[1] != parts[0].shape[1]:
      raise errors.DataError(
          f"{path} holds embeddings of dim {part.shape[1]} but {paths[0]} "
          f"of dim {parts[0].shape[1]}: the shards of one side must come "
          "from one encoder. Remove the odd shard from the pattern, or "
          "embed it again.")
  return (parts[0] if len(parts) == 1 else Shards(paths, parts)), paths
