"""Output files are written atomically: a temp name, then a rename.

A killed job never leaves a half-written output under the final name.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from typing import IO

from paraflax import errors


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, mode: str = "wb"
                  ) -> Iterator[IO]:
  path = os.fspath(path)
  if os.path.isdir(path):
    raise errors.DataError(f"{path}: is a directory; give the output a file "
                           "path.")
  folder = os.path.dirname(os.path.abspath(path))
  os.makedirs(folder, exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-",
                             suffix="-" + os.path.basename(path))
  try:
    with os.fdopen(fd, mode) as f:
      yield f
      f.flush()
      os.fsync(f.fileno())
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs are shared
    os.replace(tmp, path)
  except BaseException:
    with contextlib.suppress(FileNotFoundError):
      os.remove(tmp)
    raise


def _umask() -> int:
  mask = os.umask(0)
  os.umask(mask)
  return mask


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
  with atomic_output(path, "w") as f:
    f.write(text)
