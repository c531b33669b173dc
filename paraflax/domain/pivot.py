"""Bilingual pivot paraphrases (Bannard & Callison-Burch 2005).

Per pivot language l: phrase pairs from the symmetrised eflomal alignment,
p_l(f|e) and p_l(e|f) by relative frequency over the extracted pairs, and
p_l(e2|e1) = sum_f p_l(e2|f) p_l(f|e1). Across languages the table gives
the plain average over the languages whose phrase table holds e1:
p(e2|e1) = sum_l p_l(e2|e1) / |{l : e1 in l}|, so every language that saw
e1 weighs the same whatever its corpus size, and a row sums to at most 1
(each p_l row sums to 1 before pruning and e2 = e1 is left out).

The bitext is streamed, aligned and its phrase pairs counted in blocks of
`block_pairs` sentence pairs; each block's counts are kept in
`TABLE.parts/`, so a killed run redone with the same command starts at the
first missing block. The table step then streams too (`write_table`,
files in `spill`): the blocks' phrases are merged from sorted runs into
ids, the counts go to bucket files of at most `rows_per_block` phrases,
p(f|e1) and p(e2|f) are computed a bucket at a time, and p(e2|e1) a bucket
of e1 at a time from its p(f|e1) and the p(e2|f) of its f, so memory
holds one block or one bucket whatever the number of blocks. It gives the
bytes of `paraphrase_rows` over every phrase at once (the same sums in the
same order, the same ties); the table is written sorted, atomically.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence

import numpy as np
from scipy import sparse

from paraflax import errors
from paraflax import files
from paraflax.data import corpora
from paraflax.data import readers
from paraflax.data import words
from paraflax.domain import alignment
from paraflax.domain import phrases
from paraflax.domain import selection
from paraflax.domain import spill
from paraflax.domain import table

PIVOT_LANGS = ("de", "fr", "cs")
SELECTED = "selected:"  # as paraflax.data.tasks.SELECTED


@dataclasses.dataclass(frozen=True)
class Bitext:
  """One foreign-English source: `stream()` gives its (foreign, English)
  pairs one at a time (files are never held whole; a registered Task is
  read as the catalogue reads it), `read()` all of them."""
  name: str
  lang: str
  stream: Callable[[], Iterator[tuple[str, str]]]

  def read(self) -> list[tuple[str, str]]:
    return list(self.stream())


def _task(spec: str) -> Bitext | None:
  name, _, split = spec.partition(":")
  corpus = corpora.CORPORA.get(name)
  if corpus is None or corpus.pair is None:
    return None

  def stream() -> Iterator[tuple[str, str]]:
    columns = corpora.read(corpus, split or "train")
    return zip(columns["source"], columns["target"])

  return Bitext(spec, corpus.pair[0], stream)


def _one_language(prefix: str, lang: str) -> Bitext:
  return Bitext(prefix, lang, lambda: readers.iter_parallel(
      [f"{prefix}.{lang}", f"{prefix}.en"]))


def _mixed(prefix: str) -> list[Bitext]:
  """The bitexts of a mixed-language prefix (P.mul, P.en and P.langs, the
  language of each row, as a `select-domain` bin of a mul source): one per
  language, in code order, each its rows in file order."""
  def stream(lang: str) -> Callable[[], Iterator[tuple[str, str]]]:
    return lambda: ((x, e) for x, e, l in readers.iter_parallel(
        [f"{prefix}.{s}" for s in (selection.MIXED, "en", selection.LANGS)])
                    if l == lang)

  codes = sorted(set(readers.iter_lines(f"{prefix}.{selection.LANGS}")))
  return [Bitext(prefix, lang, stream(lang)) for lang in codes]


def _prefix(prefix: str) -> list[Bitext]:
  """The bitexts of prefix P: P.en with one of P.de / P.fr / P.cs, or
  with P.mul and P.langs; none when P is neither."""
  if not os.path.isfile(f"{prefix}.en"):
    return []
  if all(os.path.isfile(f"{prefix}.{s}")
         for s in (selection.MIXED, selection.LANGS)):
    return _mixed(prefix)
  langs = [l for l in PIVOT_LANGS if os.path.isfile(f"{prefix}.{l}")]
  return [_one_language(prefix, langs[0])] if len(langs) == 1 else []


def _selected(spec: str) -> list[Bitext]:
  """`selected:FOLDER:BIN`, a bin Task of `paraflax select-domain`."""
  if not spec.startswith(SELECTED):
    return []
  folder, _, number = spec[len(SELECTED):].rpartition(":")
  bins = corpora.selected_bins(folder)
  if number not in bins:
    raise errors.DataError(f"--bitext {spec}: {folder} has bins "
                           f"{', '.join(bins) or 'none'}.")
  return _prefix(bins[number][1].removesuffix(".en"))


def resolve(spec: str) -> list[Bitext]:
  """A registered bitext Task (`name` or `name:split`, default train), a
  bin Task `selected:FOLDER:BIN`, a file prefix P with P.en and one of
  P.de / P.fr / P.cs (a bin's files: SEL/bin_1), or with P.mul and P.langs
  (a bin of a mixed source: one bitext per language), or a folder: every
  such prefix in it, in name order."""
  task = _task(spec)
  found = _selected(spec) or ([task] if task else []) or _prefix(spec)
  if found:
    return found
  if os.path.isdir(spec):
    stems = sorted({os.path.join(spec, n[:-3]) for n in os.listdir(spec)
                    if n.endswith(".en")})
    out = [b for stem in stems for b in _prefix(stem)]
    if out:
      return out
  raise errors.DataError(
      f"--bitext {spec}: neither a bitext Task (paraflax tasks: "
      "bitext_<corpus>_<xx>_en[:split], selected:SEL:<bin>), nor a prefix P with P.en and one of "
      f"P.{', P.'.join(PIVOT_LANGS)} (or P.mul and P.langs), nor a folder "
      "holding such pairs.")


@dataclasses.dataclass
class BlockStats:
  pairs: int = 0
  skipped: int = 0
  align_s: float = 0.0
  phrase_pairs: int = 0
  extract_s: float = 0.0


def extract_block(pairs: Sequence[tuple[str, str]], max_len: int,
                  max_words: int, iterations: float
                  ) -> tuple[phrases.PhraseCounts, BlockStats]:
  """Aligns one block of (foreign, English) pairs and counts its phrase
  pairs. Pairs with an empty side or over `max_words` words are skipped
  (counted in the stats)."""
  tokenized = [(words.tokenize(f), words.tokenize(e)) for f, e in pairs]
  kept = [(f, e) for f, e in tokenized
          if f and e and len(f) <= max_words and len(e) <= max_words]
  stats = BlockStats(pairs=len(kept), skipped=len(pairs) - len(kept))
  counts = phrases.PhraseCounts()
  if not kept:
    return counts, stats
  start = time.perf_counter()
  links = alignment.align([f for f, _ in kept], [e for _, e in kept],
                          iterations=iterations)
  stats.align_s = time.perf_counter() - start
  start = time.perf_counter()
  for (f, e), a in zip(kept, links):
    stats.phrase_pairs += counts.add(e, f, a, max_len)
  stats.extract_s = time.perf_counter() - start
  return counts, stats


def _save_block(path: str, counts: phrases.PhraseCounts,
                stats: BlockStats) -> None:
  m = counts.matrix().tocoo()
  with files.atomic_output(path) as f:
    np.savez(f, english="\n".join(counts.english), foreign="\n".join(
        counts.foreign), e=m.row.astype(np.int32), f=m.col.astype(np.int32),
             count=m.data.astype(np.int32),
             stats=np.asarray(dataclasses.astuple(stats), np.float64))


def _block_phrases(path: str, side: str) -> list[str]:
  """A part's English or foreign phrases, in id order."""
  with np.load(path) as z:
    return str(z[side]).split("\n") if z["e"].size else []


def _block_stats(path: str) -> BlockStats:
  with np.load(path) as z:
    return BlockStats(*(t(v) for t, v in zip(
        (int, int, float, int, float), z["stats"])))


def _block_arrays(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """A part's counts: (English id, foreign id, count) of each pair."""
  with np.load(path) as z:
    return z["e"], z["f"], z["count"]


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


def _normalized(m: sparse.csr_matrix) -> sparse.csr_matrix:
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


def _language(counts: sparse.csr_matrix, max_pivots: int,
              max_back: int) -> Language:
  return Language(top_per_row(_normalized(counts), max_pivots),
                  top_per_row(_normalized(counts.T.tocsr()), max_back),
                  np.diff(counts.indptr) > 0)


def paraphrase_rows(langs: Sequence[Language], start: int, stop: int,
                    max_paraphrases: int, min_prob: float
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """p(e2|e1) for e1 in [start, stop): the average over the languages that
  hold e1, e2 = e1 dropped, the best `max_paraphrases` of each row with p
  >= `min_prob`, as `best_per_row` (rows relative to `start`). The
  definition, over every phrase at once; the command's `write_table`
  gives the same rows a bucket at a time."""
  window = [Language(l.forward[start:stop], l.backward, l.has[start:stop])
            for l in langs]
  columns = np.arange(langs[0].backward.shape[1])
  return _paraphrases(window, np.arange(start, stop), columns,
                      max_paraphrases, min_prob)


def _paraphrases(langs: Sequence[Language], e1: np.ndarray, e2: np.ndarray,
                 max_paraphrases: int, min_prob: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """`paraphrase_rows` of languages whose p(f|e1) rows are the phrases
  `e1` and whose p(e2|f) columns are the phrases `e2` (global ids)."""
  total = sum(l.forward @ l.backward for l in langs)
  held = sum(l.has.astype(np.float64) for l in langs)
  total = (sparse.diags(1.0 / np.maximum(held, 1.0)) @ total).tocoo()
  keep = (e2[total.col] != e1[total.row]) & (total.data >= min_prob)
  return best_per_row(total, max_paraphrases, keep)


def build_table(bitext: Sequence[str], output: str, config,
                overwrite: bool = False) -> dict:
  """`paraflax pivot`: the paraphrase table of `bitext` (Tasks, prefixes
  or folders) at `output`; returns the throughput summary."""
  c = config.pivot
  sources = [b for spec in bitext for b in resolve(spec)]
  files.check_output(output)
  parts = output + ".parts"
  # eflomal learns from the pairs it aligns together: each language's
  # sources are aligned as one corpus (two bins of a selection, or three
  # Tasks), not source by source.
  settings = {"bitext": [(b.name, b.lang) for b in sources],
              "pivot": c.to_dict(), "aligned": "per language"}
  files.claim_output(output, settings, overwrite=overwrite,
                     leftovers=[parts])
  os.makedirs(parts, exist_ok=True)
  by_lang: dict[str, list[str]] = {}
  for lang in dict.fromkeys(b.lang for b in sources):
    pairs = itertools.chain.from_iterable(b.stream() for b in sources
                                          if b.lang == lang)
    for b in itertools.count():
      block = list(itertools.islice(pairs, c.block_pairs))
      if not block:
        break
      path = os.path.join(parts, f"{lang}-{b:05d}.npz")
      if not os.path.exists(path):
        counts, stats = extract_block(block,
                                      c.max_phrase_len, c.max_sentence_words,
                                      c.align_iterations)
        _save_block(path, counts, stats)
        logging.info("%s block %d: %d pairs aligned in %.1f s, %d phrase "
                     "pairs in %.1f s", lang, b, stats.pairs,
                     stats.align_s, stats.phrase_pairs, stats.extract_s)
      by_lang.setdefault(lang, []).append(path)
  return write_table(by_lang, output, c)


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
      r, k, p = best_per_row(_normalized(m), max_pivots)
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
      r, k, p = best_per_row(_normalized(m), max_back)
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
  the same bytes as `paraphrase_rows` over all phrases at once. Returns
  the summary (also OUTPUT.summary.json)."""
  folder = os.path.dirname(os.path.abspath(output))
  with tempfile.TemporaryDirectory(dir=folder, prefix=".tmp-table-") as tmp:
    return _spilled_table(by_lang, output, c, tmp)


def _runs(blocks: Sequence[tuple[str, str]], tmp: str
          ) -> tuple[list[tuple[int, int]], dict[str, BlockStats]]:
  """Each block's English and foreign phrases as sorted runs in `tmp`;
  returns their counts per block and the blocks' stats per language."""
  sizes, stats = [], {}
  for b, (lang, path) in enumerate(blocks):
    sizes.append(tuple(spill.write_run(
        os.path.join(tmp, f"{side[0]}{b}.run"), _block_phrases(path, side))
                       for side in ("english", "foreign")))
    total, s = stats.setdefault(lang, BlockStats()), _block_stats(path)
    for field in dataclasses.fields(BlockStats):
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
    e, f, n = _block_arrays(blocks[b][1])
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
    langs.append(Language(
        sparse.csr_matrix((forward["p"], (forward["row"] - start,
                                          np.searchsorted(f, forward["col"]))),
                          shape=(stop - start, len(f))),
        sparse.csr_matrix((backward["p"], (np.searchsorted(f, backward["row"]),
                                           np.searchsorted(e2, backward["col"]))),
                          shape=(len(f), len(e2))),
        np.isin(np.arange(start, stop), forward["row"])))
  rows, cols, probs = _paraphrases(langs, np.arange(start, stop), e2,
                                   c.max_paraphrases, c.min_prob)
  return rows, e2[cols], probs
