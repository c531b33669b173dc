"""LASER's embedding files: a raw little-endian N x d matrix, no header.

float32 by default, float16 for LASER's `--fp16` files. Files are memory
mapped, so a corpus bigger than RAM is read one block at a time. The raw
format stays LASER's for interchange; the files paraflax writes get a
sidecar, `FILE.info.json` (rows, dim, dtype), which every read checks, so a
file read with the wrong --dim or --fp16 stops instead of giving other
rows; with a sidecar, --dim may be left out.
"""
from __future__ import annotations

import hashlib
import json
import os

import numpy as np

from paraflax import errors
from paraflax import files
from paraflax.mining import knn

_FINGERPRINT_BYTES = 1 << 20  # hashed from each end of a file


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
  info = {"format": "LASER raw: little-endian row-major, no header",
          "rows": rows, "dim": dim, "dtype": matrix.dtype.name}
  return files.write_all_once(
      {path: matrix.tobytes(),
       info_path(path): json.dumps(info, indent=2) + "\n"},
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
