"""Stand-ins that give the recipes their shapes without data.

A recipe reads its vocabulary sizes from sentencepiece processors or a
word vocabulary, and its batches from streams over encoded rows. The
programs compiled ahead of time are built from the same recipe classes
and streams, fed these stand-ins: every row `width` ids long, so a
stream's batch has exactly the shapes a real batch of that width has.
"""
from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class Pieces:
  """A sentencepiece processor's size, for `make_model`."""
  size: int

  def get_piece_size(self) -> int:
    return self.size

  def encode(self, text: str) -> list[int]:
    raise NotImplementedError("no text is encoded ahead of time")


@dataclasses.dataclass(frozen=True)
class Words:
  """A word vocabulary of `size` words, for `make_model`."""
  size: int

  def __len__(self) -> int:
    return self.size


@dataclasses.dataclass(frozen=True)
class Rows:
  """`count` encoded rows, each `width` ids long (EOS included)."""
  count: int
  width: int

  def __len__(self) -> int:
    return self.count

  def __getitem__(self, row: int) -> np.ndarray:
    return np.full(self.width, 3, np.int32)

  def lengths(self, rows: np.ndarray) -> np.ndarray:
    return np.full(len(rows), self.width, np.int64)


def widths(max_len: int, multiple: int) -> list[int]:
  """The padded widths a run of `max_len` ids meets, `multiple` apart."""
  top = -(-max_len // multiple) * multiple
  return list(range(multiple, top + 1, multiple))
