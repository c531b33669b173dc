"""LASER's embedding files: a raw little-endian N x d matrix, no header.

float32 by default, float16 for LASER's `--fp16` files. Files are memory
mapped, so a corpus bigger than RAM is read one block at a time.
"""
from __future__ import annotations

import hashlib
import os

import numpy as np

from paraflax import errors
from paraflax import files
from paraflax.mining import knn

_FINGERPRINT_BYTES = 1 << 20  # hashed from each end of a file


def dtype(fp16: bool) -> np.dtype:
  return np.dtype("<f2" if fp16 else "<f4")


def read(path: str, dim: int, *, fp16: bool = False) -> np.ndarray:
  """The [N, dim] matrix of `path`, memory-mapped, with finite rows."""
  if dim < 1:
    raise errors.ConfigError(f"--dim {dim}: the embedding dimension must be "
                             "positive.")
  if not os.path.isfile(path):
    raise errors.DataError(f"{path}: embedding file not found. Check the "
                           "path (or embed the text first: paraflax embed).")
  kind = dtype(fp16)
  size, row_bytes = os.path.getsize(path), dim * kind.itemsize
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
  """Writes `emb` as LASER does, atomically, so no half-written file; False
  when `path` holds these very embeddings already. Other contents of `path`
  are refused (a `ConfigError`) unless `overwrite`."""
  return files.write_once(path, np.ascontiguousarray(emb, dtype(fp16)
                                                     ).tobytes(),
                          overwrite=overwrite)


def fingerprint(path: str) -> str:
  """Changes when the file does: its size, mtime and both ends' bytes."""
  stat = os.stat(path)
  digest = hashlib.sha256(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
  with open(path, "rb") as f:
    digest.update(f.read(_FINGERPRINT_BYTES))
    f.seek(max(0, stat.st_size - _FINGERPRINT_BYTES))
    digest.update(f.read(_FINGERPRINT_BYTES))
  return digest.hexdigest()
