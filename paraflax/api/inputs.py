"""The checks of what callers of the Python API pass, as the command line
checks a file's lines: lists of sentences and arrays of embeddings."""
from __future__ import annotations

from typing import Any

from paraflax import errors

_SHOWN = 40  # characters of a bad item that a message quotes


def quoted(value: Any) -> str:
  shown = repr(value)
  return shown if len(shown) <= _SHOWN else shown[:_SHOWN] + "..."


def sentences(texts: Any, name: str, what: str, *, blank: bool = False
               ) -> list[str]:
  """`texts` as a list of str sentences, or DataError: a str alone, no
  sentence at all, an item that is not a str (its index and type), or,
  unless `blank`, an empty sentence (its index). `name` is the argument,
  `what` the work ("embed") for the messages."""
  if isinstance(texts, (str, bytes, bytearray)):
    raise errors.DataError(
        f"{name} is one {type(texts).__name__} ({quoted(texts)}), not a "
        f"list of sentences; pass a list: [{name}] for one sentence (a str "
        "alone would be taken as its characters).")
  try:
    items = list(texts)
  except TypeError:
    raise errors.DataError(
        f"{name} is {quoted(texts)} ({type(texts).__name__}), not a list "
        "of sentences; "
        "pass a list of str, one sentence each.") from None
  if not items:
    raise errors.DataError(f"{name} is empty: no sentence to {what}. Pass "
                           "a list of at least one sentence.")
  for i, text in enumerate(items):
    if not isinstance(text, str):
      raise errors.DataError(
          f"{name}[{i}] is {quoted(text)} ({type(text).__name__}), not a "
          "str: every item is one sentence as a str.")
    if not blank and not text.strip():
      raise errors.DataError(
          f"{name}[{i}] is an empty sentence ({text!r}): there is nothing "
          f"to {what}. Remove it (the command line refuses empty lines "
          "too).")
  return items


def embeddings(value: Any, name: str) -> Any:
  """`value` as an array of numbers, or DataError naming `name` and what
  it holds instead (the k-NN checks its shape and finite rows)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  try:
    array = np.asarray(value)
  except (ValueError, TypeError) as e:  # ragged rows
    raise errors.DataError(f"{name} is not an array of embeddings [rows, "
                           f"dim]: {e}") from None
  if array.dtype.kind not in "fiu":
    raise errors.DataError(
        f"{name} holds {array.dtype} values, not numbers: pass embeddings "
        "as a [rows, dim] float array (e.g. what Model.embed returns).")
  return value


def count(value: Any, name: str, minimum: int = 1) -> int:
  """`value` as an int >= `minimum`, or ConfigError naming `name`: a float
  (even 2.0), a bool or a str would otherwise reach jax's shapes."""
  import numbers  # pylint: disable=g-import-not-at-top
  if isinstance(value, bool) or not isinstance(value, numbers.Integral):
    raise errors.ConfigError(
        f"{name}={quoted(value)} ({type(value).__name__}): {name} is a "
        f"count; pass an int >= {minimum}.")
  if value < minimum:
    raise errors.ConfigError(f"{name}={value}: pass an int >= {minimum}.")
  return int(value)
