"""How much of an output appended in units (a unit: lines written in one
write) a killed run left whole; the rest is cut off, and a file that holds
other records than this run writes is refused as edited."""
from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Callable, Sequence

from paraflax import errors


def _edited(path: str, what: str) -> errors.DataError:
  return errors.DataError(
      f"{path}: {what} than this run writes, though the settings match: the "
      "file was edited. Use a new --output, or --overwrite to replace it.")


def finished_prefix(path: str, sizes: Sequence[int], *, unit: str,
                    fits: Callable[[int, list[bytes]], bool] | None = None
                    ) -> int:
  """How many leading units `path` holds whole, unit i being `sizes[i]`
  lines appended in one write; cuts off the rest, which only a run killed
  inside a write leaves. An output claimed by `claim_output` resumes from
  there.

  `fits(i, lines)`, if given, says whether unit i holds what this run
  would write; one that does not, or lines beyond the last unit, mean the
  file was edited (a `DataError`). Reads one unit at a time: memory does not grow
  with the file.
  """
  if not os.path.exists(path):
    return 0
  done, offset = 0, 0
  with open(path, "rb") as f:
    for size in sizes:
      lines = list(itertools.islice(f, size))
      whole = [l for l in lines if l.endswith(b"\n")]  # else a half line
      if len(whole) < size:
        break
      if fits and not fits(done, lines):
        raise _edited(path, f"{unit} {done + 1} holds other records")
      offset += sum(map(len, lines))
      done += 1
  left = os.path.getsize(path) - offset
  if left:
    if done == len(sizes):
      raise _edited(path, "holds more records")
    logging.warning("%s: a killed run left %d of the %d records of %s %d "
                    "(%d bytes); dropping them, the %s is redone", path,
                    len(whole), sizes[done], unit, done + 1, left, unit)
    with open(path, "r+b") as f:
      f.truncate(offset)
  return done
