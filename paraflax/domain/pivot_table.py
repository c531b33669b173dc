"""The pivot table written from the parts in bounded memory.

The blocks' phrases (`TABLE.parts/`, `pivot_blocks`) are merged from
sorted runs into ids, the counts go to bucket files of at most
`rows_per_block` phrases, p(f|e1) and p(e2|f) are computed a bucket at a
time, and p(e2|e1) a bucket of e1 at a time from its p(f|e1) and the
p(e2|f) of its f, so memory holds one block or one bucket whatever the
number of blocks (the files: `spill`). It gives the bytes of
`pivot_probs.paraphrase_rows` over every phrase at once (the same sums in
the same order, the same ties); the table is written sorted, atomically.
"""
from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Sequence

import numpy as np
from scipy import sparse

from paraflax import files
from paraflax.domain import pivot_blocks
from paraflax.domain import pivot_probs
from paraflax.domain import spill
from paraflax.domain import table

_COUNT = np.dtype([("e", np.int64), ("f", np.int64), ("n", np.float64)])
# An entry of p(f|e) (row e, column f) or of p(e|f) (row f, column e).
_ENTRY = np.dtype([("row", np.int64), ("col", np.int64), ("p", np.float64)])
_NEED = np.dtype([("f", np.int64), ("bucket", np.int64)])
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_LINES = 1 << 16  # table lines formatted per write


def _entries(rows: np.ndarray, cols: np.ndarray, p: np.ndarray
             ) -> np.ndarray:
  out = np.empty(len(rows), _ENTRY)
  out["row"], out["col"], out["p"] = rows, cols, p
  return out


def _counts_matrix(rows: np.ndarray, cols: np.ndarray, n: np.ndarray
                   ) -> tuple[sparse.csr_matrix, np.ndarray, np.ndarray]:
  """The counts of one bucket as a matrix over its own row and column
  ids (np.unique: in the order of the global ids), and those ids."""
  row_ids, r = np.unique(rows, return_inverse=True)
  col_ids, k = np.unique(cols, return_inverse=True)
  m = sparse.csr_matrix((n, (r, k)), shape=(len(row_ids), len(col_ids)))
  return m, row_ids, col_ids


class _Spill:
  """The table step's files: per language, the counts by e bucket and by
  f bucket, p(f|e1) by e1 bucket, the f each e1 bucket needs (by f
  bucket) and those f's p(e2|f) by e1 bucket.

  An English phrase's bucket is its id // `rows` (buckets of e1 are
  ranges: the table is written bucket by bucket). A foreign phrase's key
  is (its first block << 32 | its id in that block), which orders foreign
  phrases as they first appear (the ties of p(f|e1)); its bucket is a
  hash of the key over `foreign` / `rows` buckets, so the frequent f,
  which appear first, are spread: about `rows` phrases a bucket whatever
  the corpus size."""

  def __init__(self, folder: str, lang: str, rows: int, foreign: int):
    self.rows = rows
    self.f_buckets = np.uint64(max(1, -(-foreign // rows)))
    self.by_e, self.by_f, self.forward, self.needs, self.backward = (
        spill.Buckets(folder, f"{lang}.{name}", dtype) for name, dtype in (
            ("count_e", _COUNT), ("count_f", _COUNT), ("forward", _ENTRY),
            ("need", _NEED), ("backward", _ENTRY)))

  def f_bucket(self, keys: np.ndarray) -> np.ndarray:
    mixed = keys.astype(np.uint64) * _GOLDEN  # wraps: a multiplicative hash
    return ((mixed >> np.uint64(32)) % self.f_buckets).astype(np.int64)

  def add_counts(self, counts: np.ndarray) -> None:
    self.by_e.append(counts["e"] // self.rows, counts)
    self.by_f.append(self.f_bucket(counts["f"]), counts)

  def forward_pass(self, max_pivots: int) -> int:
    """p(f|e1), its `max_pivots` best f per e1 (ties by first
    appearance), by e1 bucket; returns the English phrases seen."""
    english = 0
    for bucket in sorted(self.by_e.written):
      c = self.by_e.read(bucket)
      m, e_ids, f_keys = _counts_matrix(c["e"], c["f"], c["n"])
      r, k, p = pivot_probs.best_per_row(pivot_probs.normalized(m),
                                         max_pivots)
      self.forward.append(np.full(len(r), bucket),
                          _entries(e_ids[r], f_keys[k], p))
      need = np.unique(f_keys[k])
      found = np.empty(len(need), _NEED)
      found["f"], found["bucket"] = need, bucket
      self.needs.append(self.f_bucket(need), found)
      english += len(e_ids)
    return english

  def backward_pass(self, max_back: int) -> None:
    """p(e2|f), its `max_back` best e2 per f, copied to each e1 bucket
    whose p(f|e1) holds f."""
    for bucket in sorted(self.by_f.written):
      c = self.by_f.read(bucket)
      m, f_keys, e_ids = _counts_matrix(c["f"], c["e"], c["n"])
      r, k, p = pivot_probs.best_per_row(pivot_probs.normalized(m),
                                         max_back)
      need = self.needs.read(bucket)
      row = np.searchsorted(f_keys, need["f"])  # each needed f is counted
      first = np.searchsorted(r, row)
      size = np.searchsorted(r, row, side="right") - first
      at = (np.arange(size.sum()) - np.repeat(np.cumsum(size) - size, size)
            + np.repeat(first, size))
      self.backward.append(np.repeat(need["bucket"], size),
                           _entries(f_keys[r[at]], e_ids[k[at]], p[at]))


def write_table(by_lang: dict[str, list[str]], output: str, c) -> dict:
  """The table of the parts (`TABLE.parts/` files, per language in block
  order) with the `pivot` settings `c`, holding one block or one bucket
  of `rows_per_block` phrases in memory at a time (`_Spill`, `spill`):
  the same bytes as `pivot_probs.paraphrase_rows` over all phrases at
  once. Returns the summary (also OUTPUT.summary.json)."""
  folder = os.path.dirname(os.path.abspath(output))
  with tempfile.TemporaryDirectory(dir=folder, prefix=".tmp-table-") as tmp:
    return _spilled_table(by_lang, output, c, tmp)


def _runs(blocks: Sequence[tuple[str, str]], tmp: str
          ) -> tuple[list[tuple[int, int]],
                     dict[str, pivot_blocks.BlockStats]]:
  """Each block's English and foreign phrases as sorted runs in `tmp`;
  returns their counts per block and the blocks' stats per language."""
  sizes, stats = [], {}
  for b, (lang, path) in enumerate(blocks):
    sizes.append(tuple(spill.write_run(
        os.path.join(tmp, f"{side[0]}{b}.run"),
        pivot_blocks.block_phrases(path, side))
                       for side in ("english", "foreign")))
    total = stats.setdefault(lang, pivot_blocks.BlockStats())
    s = pivot_blocks.block_stats(path)
    for field in dataclasses.fields(pivot_blocks.BlockStats):
      setattr(total, field.name, getattr(total, field.name)
              + getattr(s, field.name))
  return sizes, stats


def _spill_language(blocks: Sequence[tuple[str, str]], mine: list[int],
                    sizes: list[tuple[int, int]], tmp: str, c
                    ) -> tuple[_Spill, int, int]:
  """One language's blocks (`mine`) merged into foreign ids, counted,
  p(f|e1) and p(e2|f) spilled; returns the spill and its English and
  foreign phrase counts."""
  foreign = spill.merge_runs(
      [os.path.join(tmp, f"f{b}.run") for b in mine],
      [os.path.join(tmp, f"f{b}.map") for b in mine],
      lambda count, block, local: (block << 32) | local)
  spilled = _Spill(tmp, blocks[mine[0]][0], c.rows_per_block, foreign)
  for b in mine:
    e, f, n = pivot_blocks.block_arrays(blocks[b][1])
    counts = np.empty(len(e), _COUNT)
    counts["e"] = spill.read_map(os.path.join(tmp, f"e{b}.map"),
                                 sizes[b][0])[e]
    counts["f"] = spill.read_map(os.path.join(tmp, f"f{b}.map"),
                                 sizes[b][1])[f]
    counts["n"] = n
    spilled.add_counts(counts)
  english = spilled.forward_pass(c.max_pivots)
  spilled.backward_pass(c.max_back)
  return spilled, english, foreign


def _spilled_table(by_lang: dict[str, list[str]], output: str, c,
                   tmp: str) -> dict:
  blocks = [(lang, path) for lang in sorted(by_lang)
            for path in by_lang[lang]]
  sizes, stats = _runs(blocks, tmp)
  strings = spill.Strings(os.path.join(tmp, "english"))
  total = spill.merge_runs(
      [os.path.join(tmp, f"e{b}.run") for b in range(len(blocks))],
      [os.path.join(tmp, f"e{b}.map") for b in range(len(blocks))],
      lambda count, block, local: count, strings.add)
  strings.close()
  spills, summary = [], {"languages": {}}
  for lang, s in stats.items():
    spilled, english, foreign = _spill_language(
        blocks, [b for b, (l, _) in enumerate(blocks) if l == lang], sizes,
        tmp, c)
    spills.append(spilled)
    summary["languages"][lang] = {
        **dataclasses.asdict(s),
        "pairs_per_s": s.pairs / max(s.align_s, 1e-9),
        "phrase_pairs_per_s": s.phrase_pairs / max(s.extract_s, 1e-9),
        "english_phrases": english, "foreign_phrases": foreign}
  lines = e1 = 0
  with files.atomic_output(output, "w") as out:
    for bucket, start in enumerate(range(0, total, c.rows_per_block)):
      stop = min(start + c.rows_per_block, total)
      rows, cols, probs = _bucket_rows(
          [(s.forward.read(bucket), s.backward.read(bucket))
           for s in spills], start, stop, c)
      found = strings.get(np.concatenate([rows + start, cols]))
      for a in range(0, len(rows), _LINES):
        out.write("".join(table.format_line(found[start + r], found[col], p)
                          for r, col, p in zip(rows[a:a + _LINES].tolist(),
                                               cols[a:a + _LINES].tolist(),
                                               probs[a:a + _LINES].tolist())))
      lines += len(rows)
      e1 += len(np.unique(rows))
  strings.release()
  summary.update(lines=lines, e1=e1, english_phrases=total)
  files.write_text_atomic(output + ".summary.json",
                          json.dumps(summary, indent=2) + "\n")
  print(f"{output}: {lines} paraphrase pairs of {e1} phrases; "
        + "; ".join(f"{l}: {s['pairs']} pairs aligned at "
                    f"{s['pairs_per_s']:.0f}/s, {s['phrase_pairs']} phrase "
                    f"pairs at {s['phrase_pairs_per_s']:.0f}/s"
                    for l, s in summary["languages"].items()))
  return summary


def _bucket_rows(entries: Sequence[tuple[np.ndarray, np.ndarray]],
                 start: int, stop: int, c
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """`paraphrase_rows` of e1 in [start, stop) from each language's
  p(f|e1) of those e1 and p(e2|f) of their f, over the bucket's own f and
  e2 ids (in the order of the global ids, so sums and ties come out the
  same); columns are global e2 ids."""
  e2 = np.unique(np.concatenate([b["col"] for _, b in entries]))
  langs = []
  for forward, backward in entries:
    f = np.unique(forward["col"])
    langs.append(pivot_probs.Language(
        sparse.csr_matrix((forward["p"], (forward["row"] - start,
                                          np.searchsorted(f, forward["col"]))),
                          shape=(stop - start, len(f))),
        sparse.csr_matrix((backward["p"], (np.searchsorted(f, backward["row"]),
                                           np.searchsorted(e2, backward["col"]))),
                          shape=(len(f), len(e2))),
        np.isin(np.arange(start, stop), forward["row"])))
  rows, cols, probs = pivot_probs.paraphrases(
      langs, np.arange(start, stop), e2, c.max_paraphrases, c.min_prob)
  return rows, e2[cols], probs
