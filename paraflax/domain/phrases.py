"""Phrase pairs consistent with a word alignment (Koehn's extraction).

A pair of spans is consistent when no word inside either span is linked to
a word outside the other and at least one link lies inside; unaligned
foreign words at the edges extend a pair into further pairs (Koehn,
Statistical Machine Translation, 2010, section 5.2.3).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import sparse

from paraflax.domain import alignment

Span = tuple[int, int]  # [start, end], both inclusive


def extract(len_e: int, len_f: int, links: Sequence[alignment.Link],
            max_len: int) -> list[tuple[Span, Span]]:
  """Every consistent (English span, foreign span) of at most `max_len`
  words a side."""
  f_aligned = [False] * len_f
  e_links: list[list[int]] = [[] for _ in range(len_e)]
  f_links: list[list[int]] = [[] for _ in range(len_f)]
  for e, f in links:
    f_aligned[f] = True
    e_links[e].append(f)
    f_links[f].append(e)
  pairs = []
  for e_start in range(len_e):
    f_start, f_end = len_f, -1
    for e_end in range(e_start, min(e_start + max_len, len_e)):
      for f in e_links[e_end]:
        f_start, f_end = min(f_start, f), max(f_end, f)
      if f_end < 0 or f_end - f_start >= max_len:
        continue
      if any(not e_start <= e <= e_end
             for f in range(f_start, f_end + 1) for e in f_links[f]):
        continue
      pairs.extend(_extended((e_start, e_end), f_start, f_end, f_aligned,
                             max_len))
  return pairs


def _extended(e_span: Span, f_start: int, f_end: int,
              f_aligned: Sequence[bool], max_len: int
              ) -> list[tuple[Span, Span]]:
  """The tight pair and its extensions over unaligned foreign edge words."""
  out = []
  fs = f_start
  while fs >= 0 and (fs == f_start or not f_aligned[fs]):
    fe = f_end
    while fe < len(f_aligned) and (fe == f_end or not f_aligned[fe]):
      if fe - fs >= max_len:
        break
      out.append((e_span, (fs, fe)))
      fe += 1
    fs -= 1
  return out


class PhraseCounts:
  """Counts c(e, f) of extracted phrase pairs, phrases interned as ids."""

  def __init__(self):
    self.english: dict[str, int] = {}
    self.foreign: dict[str, int] = {}
    self._e: list[int] = []
    self._f: list[int] = []

  def add(self, e_words: Sequence[str], f_words: Sequence[str],
          links: Sequence[alignment.Link], max_len: int) -> int:
    """Adds a sentence pair's phrase pairs; returns how many."""
    pairs = extract(len(e_words), len(f_words), links, max_len)
    for (es, ee), (fs, fe) in pairs:
      e = " ".join(e_words[es:ee + 1])
      f = " ".join(f_words[fs:fe + 1])
      self._e.append(self.english.setdefault(e, len(self.english)))
      self._f.append(self.foreign.setdefault(f, len(self.foreign)))
    return len(pairs)

  def matrix(self) -> sparse.csr_matrix:
    """[English phrases, foreign phrases] counts (repeats summed)."""
    e = np.asarray(self._e, np.int64)
    f = np.asarray(self._f, np.int64)
    return sparse.csr_matrix((np.ones(len(e), np.float64), (e, f)),
                             shape=(len(self.english), len(self.foreign)))
