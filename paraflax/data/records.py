"""The fields of paraflax's JSONL records and their checks: a line parsed
into a record, and no record's key (an n-best hypothesis) twice in a file."""
from __future__ import annotations

import codecs
import hashlib
import json
import math
from collections.abc import Sequence

import numpy as np

from paraflax import errors
from paraflax.data import readers


def _is_number(value: object) -> bool:
  return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_score_map(value: object) -> bool:
  return isinstance(value, dict) and all(
      v is None or _is_number(v) for v in value.values())


# The fields of paraflax's records, one meaning each wherever they appear
# (back-translation n-best lists, scored files): what each must hold.
FIELDS = {
    "id": ("an integer or a string",
           lambda v: isinstance(v, (int, str)) and not isinstance(v, bool)),
    "reference": ("a string", lambda v: isinstance(v, str)),
    "translation": ("a string", lambda v: isinstance(v, str)),
    "source": ("a string", lambda v: isinstance(v, str)),
    "rank": ("an integer >= 0", lambda v: isinstance(v, int)
             and not isinstance(v, bool) and v >= 0),
    "cost": ("a number, or null where no model scored the pair",
             lambda v: v is None or _is_number(v)),
    "nll": ("a number", _is_number),
    "scores": ("an object of numbers (null where no model scored the pair)",
               _is_score_map),
}


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
  keys = [k for k, _ in pairs]
  twice = sorted({k for k in keys if keys.count(k) > 1})
  if twice:
    raise ValueError(f"key {twice[0]!r} given twice")
  return dict(pairs)


def _finite(text: str) -> float:
  value = float(text)
  if not math.isfinite(value):
    raise ValueError(f"{text} overflows to infinity")
  return value


def _not_a_number(text: str) -> float:
  raise ValueError(f"{text} is not a number JSON allows")


def parse_record(path: str, number: int, line: str, keys: Sequence[str],
            fix: str) -> dict:
  try:
    record = json.loads(line, object_pairs_hook=_no_duplicate_keys,
                        parse_float=_finite, parse_constant=_not_a_number)
  except json.JSONDecodeError as e:
    raise errors.DataError(f"{path}:{number}: not JSON ({e.msg}). A killed writer "
                    "leaves a half line: rerun it to finish the file.") from e
  except ValueError as e:
    raise errors.DataError(f"{path}:{number}: {e}. Fix that record; every "
                           "number must be finite.") from e
  missing = [k for k in keys if not isinstance(record, dict) or k not in record]
  if missing:
    raise errors.DataError(f"{path}:{number}: record lacks {missing}. {fix}"
                           .rstrip())
  for key, (want, fits) in FIELDS.items():
    if key in record and not fits(record[key]):
      raise errors.DataError(
          f"{path}:{number}: field {key!r} is {json.dumps(record[key])}, "
          f"not {want}. Fix that record. {fix}".rstrip())
  return record


# One hypothesis of an n-best list: no two records of a file share these.
NBEST_KEY = ("id", "rank")


class UniqueRecords:
  """Stops at a record whose `fields` repeat an earlier record's (a
  back-translation's (id, rank): the same hypothesis twice), naming both
  lines; records without all of `fields` are not compared. Memory grows
  by 8 bytes a record (a 64-bit digest of its key, kept in a sorted
  array); a repeated digest is confirmed, and the first line found, by
  reading the file again up to it."""

  _PENDING = 1 << 16  # digests gathered before they join the sorted array

  def __init__(self, path: str, fields: Sequence[str] = NBEST_KEY):
    self.path, self.fields = path, tuple(fields)
    self._sorted = np.zeros(0, np.int64)
    self._pending: set[int] = set()

  def _key(self, record: dict) -> str:
    return json.dumps([record.get(f) for f in self.fields])

  def _seen(self, digest: int) -> bool:
    if digest in self._pending:
      return True
    at = int(np.searchsorted(self._sorted, digest))
    return at < len(self._sorted) and int(self._sorted[at]) == digest

  def _first_line(self, key: str, number: int) -> int | None:
    """The line before `number` whose record has `key`, if any."""
    for line, raw in enumerate(readers.raw_lines(self.path), start=1):
      if line >= number:
        return None
      if line == 1:
        raw = raw.removeprefix(codecs.BOM_UTF8)
      try:
        record = json.loads(raw)
      except ValueError:
        continue
      if isinstance(record, dict) and all(f in record for f in self.fields) \
          and self._key(record) == key:
        return line
    return None

  def check(self, number: int, record: dict) -> None:
    if not all(f in record for f in self.fields):
      return
    key = self._key(record)
    digest = int.from_bytes(hashlib.blake2b(
        key.encode(), digest_size=8).digest(), "little", signed=True)
    if self._seen(digest):
      first = self._first_line(key, number)
      if first is None:
        return  # another key with the same digest: new, and counted
      shown = ", ".join(f"{f} {json.dumps(record.get(f))}"
                        for f in self.fields)
      raise errors.DataError(
          f"{self.path}:{number}: the record of {shown} is there already, "
          f"at line {first}. Remove the repeated records (two runs "
          "appended to one file?).")
    self._pending.add(digest)
    if len(self._pending) >= max(self._PENDING, len(self._sorted) // 64):
      pending = np.sort(np.fromiter(self._pending, np.int64,
                                    len(self._pending)))
      self._sorted = np.insert(self._sorted, np.searchsorted(
          self._sorted, pending), pending)
      self._pending.clear()
