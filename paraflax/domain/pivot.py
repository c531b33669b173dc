"""Bilingual pivot paraphrases (Bannard & Callison-Burch 2005).

Per pivot language l: phrase pairs from the symmetrised eflomal alignment,
p_l(f|e) and p_l(e|f) by relative frequency over the extracted pairs, and
p_l(e2|e1) = sum_f p_l(e2|f) p_l(f|e1). Across languages the table gives
the plain average over the languages whose phrase table holds e1:
p(e2|e1) = sum_l p_l(e2|e1) / |{l : e1 in l}|, so every language that saw
e1 weighs the same whatever its corpus size, and a row sums to at most 1
(each p_l row sums to 1 before pruning and e2 = e1 is left out).

The bitext is aligned and its phrase pairs counted in blocks of
`block_pairs` sentence pairs; each block's counts are kept in
`TABLE.parts/`, so a killed run redone with the same command starts at the
first missing block. The table is then written in row blocks of e1, sorted,
atomically.
"""
from __future__ import annotations

import dataclasses
import io
import json
import logging
import os
import time
from collections.abc import Callable, Sequence

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
from paraflax.domain import table

PIVOT_LANGS = ("de", "fr", "cs")
SELECTED = "selected:"  # as paraflax.data.tasks.SELECTED


@dataclasses.dataclass(frozen=True)
class Bitext:
  """One foreign-English source: `read()` gives (foreign, English) pairs."""
  name: str
  lang: str
  read: Callable[[], list[tuple[str, str]]]


def _task(spec: str) -> Bitext | None:
  name, _, split = spec.partition(":")
  corpus = corpora.CORPORA.get(name)
  if corpus is None or corpus.pair is None:
    return None

  def read() -> list[tuple[str, str]]:
    columns = corpora.read(corpus, split or "train")
    return list(zip(columns["source"], columns["target"]))

  return Bitext(spec, corpus.pair[0], read)


def _one_language(prefix: str, lang: str) -> Bitext:
  def read() -> list[tuple[str, str]]:
    rows, _ = readers.read_parallel([f"{prefix}.{lang}", f"{prefix}.en"],
                                    empty="drop")
    return rows

  return Bitext(prefix, lang, read)


def _mixed(prefix: str) -> list[Bitext]:
  """The bitexts of a mixed-language prefix (P.mul, P.en and P.langs, the
  language of each row, as a `select-domain` bin of a mul source): one per
  language, in code order, each its rows in file order."""
  def rows() -> list[tuple[str, str, str]]:
    found, _ = readers.read_parallel(
        [f"{prefix}.{s}" for s in (selection.MIXED, "en", selection.LANGS)],
        empty="drop")
    return found

  def reader(lang: str) -> Callable[[], list[tuple[str, str]]]:
    return lambda: [(x, e) for x, e, l in rows() if l == lang]

  codes = sorted(set(readers.iter_lines(f"{prefix}.{selection.LANGS}")))
  return [Bitext(prefix, lang, reader(lang)) for lang in codes]


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


def _load_block(path: str) -> tuple[list[str], list[str], np.ndarray,
                                    np.ndarray, np.ndarray, BlockStats]:
  with np.load(path) as z:
    english = str(z["english"]).split("\n") if z["e"].size else []
    foreign = str(z["foreign"]).split("\n") if z["f"].size else []
    stats = BlockStats(*(t(v) for t, v in zip(
        (int, int, float, int, float), z["stats"])))
    return english, foreign, z["e"], z["f"], z["count"], stats


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
  >= `min_prob`, as `best_per_row` (rows relative to `start`)."""
  total = sum(l.forward[start:stop] @ l.backward for l in langs)
  held = sum(l.has[start:stop].astype(np.float64) for l in langs)
  total = (sparse.diags(1.0 / np.maximum(held, 1.0)) @ total).tocoo()
  keep = (total.col != total.row + start) & (total.data >= min_prob)
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
    pairs = [p for b in sources if b.lang == lang for p in b.read()]
    for b, start in enumerate(range(0, len(pairs), c.block_pairs)):
      path = os.path.join(parts, f"{lang}-{b:05d}.npz")
      if not os.path.exists(path):
        counts, stats = extract_block(pairs[start:start + c.block_pairs],
                                      c.max_phrase_len, c.max_sentence_words,
                                      c.align_iterations)
        _save_block(path, counts, stats)
        logging.info("%s block %d: %d pairs aligned in %.1f s, %d phrase "
                     "pairs in %.1f s", lang, b, stats.pairs,
                     stats.align_s, stats.phrase_pairs, stats.extract_s)
      by_lang.setdefault(lang, []).append(path)
  return _write_table(by_lang, output, c)


def _write_table(by_lang: dict[str, list[str]], output: str, c) -> dict:
  blocks = {lang: [_load_block(p) for p in paths]
            for lang, paths in by_lang.items()}
  english = sorted({e for bs in blocks.values() for b in bs for e in b[0]})
  e_id = {e: i for i, e in enumerate(english)}
  langs, summary = [], {"languages": {}}
  for lang, bs in sorted(blocks.items()):
    f_id: dict[str, int] = {}
    rows, cols, vals = [], [], []
    stats = BlockStats()
    for e_words, f_words, e, f, count, s in bs:
      e_map = np.asarray([e_id[w] for w in e_words], np.int64)
      f_map = np.asarray([f_id.setdefault(w, len(f_id)) for w in f_words],
                         np.int64)
      rows.append(e_map[e] if len(e) else e)
      cols.append(f_map[f] if len(f) else f)
      vals.append(count)
      for field in dataclasses.fields(BlockStats):
        setattr(stats, field.name, getattr(stats, field.name)
                + getattr(s, field.name))
    counts = sparse.csr_matrix(
        (np.concatenate(vals).astype(np.float64),
         (np.concatenate(rows), np.concatenate(cols))),
        shape=(len(english), len(f_id)))
    langs.append(_language(counts, c.max_pivots, c.max_back))
    summary["languages"][lang] = {
        **dataclasses.asdict(stats),
        "pairs_per_s": stats.pairs / max(stats.align_s, 1e-9),
        "phrase_pairs_per_s": stats.phrase_pairs / max(stats.extract_s, 1e-9),
        "english_phrases": int(langs[-1].has.sum()),
        "foreign_phrases": len(f_id)}
  lines = e1 = 0
  with files.atomic_output(output, "w") as out:
    for start in range(0, len(english), c.rows_per_block):
      stop = min(start + c.rows_per_block, len(english))
      rows, cols, probs = paraphrase_rows(langs, start, stop,
                                          c.max_paraphrases, c.min_prob)
      buffer = io.StringIO()
      for r, col, p in zip(rows.tolist(), cols.tolist(), probs.tolist()):
        buffer.write(table.format_line(english[start + r], english[col], p))
      out.write(buffer.getvalue())
      lines += len(rows)
      e1 += len(np.unique(rows))
  summary.update(lines=lines, e1=e1, english_phrases=len(english))
  files.write_text_atomic(output + ".summary.json",
                          json.dumps(summary, indent=2) + "\n")
  print(f"{output}: {lines} paraphrase pairs of {e1} phrases; "
        + "; ".join(f"{l}: {s['pairs']} pairs aligned at "
                    f"{s['pairs_per_s']:.0f}/s, {s['phrase_pairs']} phrase "
                    f"pairs at {s['phrase_pairs_per_s']:.0f}/s"
                    for l, s in summary["languages"].items()))
  return summary
