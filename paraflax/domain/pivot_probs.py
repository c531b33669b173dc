"""The pivot paraphrase probabilities (Bannard & Callison-Burch 2005).

Per pivot language l: p_l(f|e) and p_l(e|f) by relative frequency over the
extracted phrase pairs, and p_l(e2|e1) = sum_f p_l(e2|f) p_l(f|e1). Across
languages the table gives the plain average over the languages whose
phrase table holds e1: p(e2|e1) = sum_l p_l(e2|e1) / |{l : e1 in l}|, so
every language that saw e1 weighs the same whatever its corpus size, and a
row sums to at most 1 (each p_l row sums to 1 before pruning and e2 = e1
is left out).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
from scipy import sparse


def best_per_row(m: sparse.spmatrix, k: int, keep: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """(rows, columns, values) of the k largest entries of each row of `m`
  (among those `keep` marks, in `m.tocoo()` order), sorted by row, then
  value (highest first), then column."""
  m = m.tocoo()
  row, col, data = m.row, m.col, m.data
  if keep is not None:
    row, col, data = row[keep], col[keep], data[keep]
  order = np.lexsort((col, -data, row))
  row, col, data = row[order], col[order], data[order]
  first = np.searchsorted(row, row, side="left")
  best = np.arange(len(row)) - first < k
  return row[best], col[best], data[best]


def top_per_row(m: sparse.spmatrix, k: int) -> sparse.csr_matrix:
  """`m` with only the k largest entries of each row."""
  row, col, data = best_per_row(m, k)
  return sparse.csr_matrix((data, (row, col)), shape=m.shape)


def normalized(m: sparse.csr_matrix) -> sparse.csr_matrix:
  """Each row divided by its sum."""
  sums = np.asarray(m.sum(axis=1)).ravel()
  return sparse.diags(1.0 / np.maximum(sums, 1e-300)) @ m


@dataclasses.dataclass
class Language:
  """One pivot language's pruned p(f|e1) and p(e2|f) over the shared
  English phrase ids."""
  forward: sparse.csr_matrix  # [E, F] p(f|e)
  backward: sparse.csr_matrix  # [F, E] p(e|f)
  has: np.ndarray  # [E] bool: e in this language's phrase table


def language(counts: sparse.csr_matrix, max_pivots: int,
             max_back: int) -> Language:
  return Language(top_per_row(normalized(counts), max_pivots),
                  top_per_row(normalized(counts.T.tocsr()), max_back),
                  np.diff(counts.indptr) > 0)


def paraphrase_rows(langs: Sequence[Language], start: int, stop: int,
                    max_paraphrases: int, min_prob: float
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """p(e2|e1) for e1 in [start, stop): the average over the languages that
  hold e1, e2 = e1 dropped, the best `max_paraphrases` of each row with p
  >= `min_prob`, as `best_per_row` (rows relative to `start`). The
  definition, over every phrase at once; `pivot_table.write_table`
  gives the same rows a bucket at a time."""
  window = [Language(l.forward[start:stop], l.backward, l.has[start:stop])
            for l in langs]
  columns = np.arange(langs[0].backward.shape[1])
  return paraphrases(window, np.arange(start, stop), columns,
                     max_paraphrases, min_prob)


def paraphrases(langs: Sequence[Language], e1: np.ndarray, e2: np.ndarray,
                max_paraphrases: int, min_prob: float
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """`paraphrase_rows` of languages whose p(f|e1) rows are the phrases
  `e1` and whose p(e2|f) columns are the phrases `e2` (global ids)."""
  total = sum(l.forward @ l.backward for l in langs)
  held = sum(l.has.astype(np.float64) for l in langs)
  total = (sparse.diags(1.0 / np.maximum(held, 1.0)) @ total).tocoo()
  keep = (e2[total.col] != e1[total.row]) & (total.data >= min_prob)
  return best_per_row(total, max_paraphrases, keep)
