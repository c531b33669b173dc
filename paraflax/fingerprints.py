"""Digests of inputs, recorded in the settings of the outputs made from
them (`files.claim_output`): a file's fingerprint, or its lines' digest."""
from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable

_FINGERPRINT_BYTES = 1 << 20  # hashed from each end of a file


def fingerprint(path: str) -> str:
  """Changes when the file does: its size, mtime and both ends' bytes. An
  input's, in the settings of an output made from it."""
  stat = os.stat(path)
  digest = hashlib.sha256(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
  with open(path, "rb") as f:
    digest.update(f.read(_FINGERPRINT_BYTES))
    f.seek(max(0, stat.st_size - _FINGERPRINT_BYTES))
    digest.update(f.read(_FINGERPRINT_BYTES))
  return digest.hexdigest()


def lines_digest(lines: Iterable[str]) -> str:
  """The digest of lines as read (a byte-order mark or CRLF endings
  removed): an input's, where the same text however encoded gives the
  same output."""
  digest = hashlib.sha256()
  for line in lines:
    digest.update(line.encode("utf-8") + b"\n")
  return digest.hexdigest()
