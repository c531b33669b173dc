"""`paraflax analyze-backtranslations`: how NMT output differs from its
references (Wieting, Mallinson & Gimpel 2017, Tables 9-11).

Every statistic is computed on the 1-best (rank 0) pairs, on the
paraphrase models' lowercased word tokens (`data.words.tokenize`):

- Table 9, per side (references, translations) and their difference:
  the entropy (bits) of the corpus's unigram and trigram distributions
  (trigrams inside a sentence, no boundary markers), and the unigram and
  trigram repetition rates: repeated items over all items, pooled over the
  corpus, an item being repeated when it already appeared earlier in the
  same sentence (unigrams: only words of `MIN_CHARS` or more characters,
  so that "a", "of" and punctuation do not dominate).
- Table 10: Pearson and Spearman correlation of `scores.ref_prob` with the
  translation's unigram and trigram repetition rates (per sentence; 0 for
  a sentence with nothing to repeat), its average IDF (`Idf`) and its
  length in tokens.
- Table 11: the `examples` translations with the highest and the lowest
  `ref_prob`, with their references (ties: the earlier record first).

One streaming pass: memory holds the n-gram counts (for the entropies),
five numbers per pair (Spearman ranks need every value) and the examples,
never the records.
"""
from __future__ import annotations

import array
import collections
import heapq
import json
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from scipy import stats

from paraflax import errors
from paraflax import files
from paraflax.data import jsonl
from paraflax.data import paths
from paraflax.data import readers
from paraflax.data import words

KEYS = ("reference", "translation", "rank")
MIN_CHARS = 3  # unigram repetition counts words of at least this length
WORD_FREQ = ("word_freq", "enwiki_vocab_min200.txt.gz")
MEASURES = ("unigram_repetition", "trigram_repetition", "average_idf",
            "length")
_STATS = ("unigram_entropy", "trigram_entropy", "unigram_repetition",
          "trigram_repetition")
_FIX = ("Analyze the output of `paraflax score-paraphrases` (or of "
        "`paraflax backtranslate`), whose records have reference, "
        "translation and rank.")
NO_REF_PROB = ("Tables 10 and 11 need ref_prob: score the file with "
               "`paraflax score-paraphrases --classifier-workdir W`.")
# The list holds only a-z words: its text had punctuation, digits and
# apostrophes as separators (`the`, `s`, `don`, `t`, numbers spelled out).
_LIST_WORD = re.compile(r"[a-z]+")


# --- Table 9: entropy and repetition ----------------------------------------

def trigrams(tokens: Sequence[str]) -> list[tuple[str, ...]]:
  return [tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)]


def long_words(tokens: Sequence[str]) -> list[str]:
  return [t for t in tokens if len(t) >= MIN_CHARS]


def repeats(items: Iterable[Any]) -> tuple[int, int]:
  """(items equal to an earlier item of the sequence, all items)."""
  seen, repeated, total = set(), 0, 0
  for item in items:
    repeated += item in seen
    seen.add(item)
    total += 1
  return repeated, total


def rate(repeated: int, total: int) -> float:
  """A repetition rate; 0 with nothing to repeat (nothing did)."""
  return repeated / total if total else 0.0


def entropy(counts: Mapping[Any, int]) -> float:
  """Entropy in bits of the distribution `counts` / their sum; 0 if empty."""
  total = sum(counts.values())
  return -sum(c / total * math.log2(c / total) for c in counts.values()
              if c) if total else 0.0


class Side:
  """Table 9's counts of one side (references or translations)."""

  def __init__(self):
    self.unigrams = collections.Counter()
    self.trigrams = collections.Counter()
    self.repeated = [0, 0]  # unigram, trigram
    self.total = [0, 0]

  def add(self, tokens: Sequence[str]) -> None:
    grams = trigrams(tokens)
    self.unigrams.update(tokens)
    self.trigrams.update(grams)
    for i, items in enumerate((long_words(tokens), grams)):
      repeated, total = repeats(items)
      self.repeated[i] += repeated
      self.total[i] += total

  def table(self) -> dict[str, float]:
    return dict(zip(_STATS, (
        entropy(self.unigrams), entropy(self.trigrams),
        rate(self.repeated[0], self.total[0]),
        rate(self.repeated[1], self.total[1]))))


# --- Table 10: IDF and correlations -----------------------------------------

class Idf(NamedTuple):
  """IDF from word counts: idf(w) = ln(T / c(w)), T the list's total count.

  The list counts words, not documents, so this is the word's
  self-information (-ln of its unigram probability), the usual stand-in
  for IDF when only counts are known; it ranks words as IDF does. A word
  absent from the list (its counts stop at `floor_count`, 200) gets
  ln(T / floor_count): a lower bound of its value.
  """
  values: dict[str, float]
  floor: float  # the IDF of a word absent from the list
  total: int
  floor_count: int


def idf_from_counts(counts: Mapping[str, int]) -> Idf:
  total, least = sum(counts.values()), min(counts.values())
  return Idf({w: math.log(total / c) for w, c in counts.items()},
             math.log(total / least), total, least)


def word_freq_path() -> str:
  return os.fspath(paths.data_path(*WORD_FREQ))


def load_idf(path: str | None = None) -> Idf:
  """The IDF of the English Wikipedia counts of `word_freq/` (DATA.md)."""
  path = path or word_freq_path()
  if not os.path.isfile(path):
    raise errors.DataError(
        f"{path}: not found. The average IDF of Table 10 reads the Wikipedia "
        "word counts of the data folder's word_freq/ (its DATA.md): set "
        f"{paths.ENV_VAR} to the folder that holds word_freq/.")
  lines, _ = readers.read_lines(path)
  counts = {}
  for number, line in enumerate(lines, start=1):
    word, _, count = line.partition(" ")
    if not word or not count.isdigit() or int(count) == 0:
      raise errors.DataError(f"{path}:{number}: expected `word count` (a "
                             "positive count); the file is corrupt, restore "
                             "it (word_freq/DATA.md has its sha256).")
    counts[word] = int(count)
  if not counts:
    raise errors.DataError(f"{path}: holds no word counts.")
  return idf_from_counts(counts)


def token_idf(token: str, idf: Idf) -> float | None:
  """A token's IDF: the mean over the list words it splits into (`t-shirt`:
  t, shirt; `don't`: don, t); None for a token without a letter a-z
  (punctuation, digits), which is not a word of the list."""
  parts = _LIST_WORD.findall(token)
  if not parts:
    return None
  return sum(idf.values.get(p, idf.floor) for p in parts) / len(parts)


def average_idf(tokens: Sequence[str], idf: Idf) -> float:
  """Mean IDF of the sentence's words; NaN for a sentence without one."""
  values = [v for v in (token_idf(t, idf) for t in tokens) if v is not None]
  return sum(values) / len(values) if values else math.nan


def measures(tokens: Sequence[str], idf: Idf) -> tuple[float, ...]:
  """The translation's values of MEASURES."""
  return (rate(*repeats(long_words(tokens))), rate(*repeats(trigrams(tokens))),
          average_idf(tokens, idf), float(len(tokens)))


def _finite(value: float) -> float | None:
  return float(value) if math.isfinite(value) else None


def correlation(x: Sequence[float], y: Sequence[float]) -> dict[str, Any]:
  """Pearson and Spearman of x and y over the pairs where both are finite;
  None (JSON null) where undefined: under 3 pairs, or a constant side."""
  x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
  keep = np.isfinite(x) & np.isfinite(y)
  x, y = x[keep], y[keep]
  out = {"n": int(keep.sum())}
  defined = len(x) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0
  for name, test in (("pearson", stats.pearsonr),
                     ("spearman", stats.spearmanr)):
    value, p = test(x, y) if defined else (math.nan, math.nan)
    out[name], out[f"{name}_p"] = _finite(value), _finite(p)
  return out


# --- Table 11: examples -------------------------------------------------------

class Ends:
  """The n records of highest and of lowest ref_prob seen so far."""

  def __init__(self, n: int):
    self.n = n
    self.high, self.low = [], []  # min-heaps of (key, -index, example)

  def add(self, index: int, ref_prob: float, example: dict) -> None:
    for heap, key in ((self.high, ref_prob), (self.low, -ref_prob)):
      item = (key, -index, example)  # the earlier record wins a tie
      if len(heap) < self.n:
        heapq.heappush(heap, item)
      elif heap and item[:2] > heap[0][:2]:  # none kept with n = 0
        heapq.heapreplace(heap, item)

  def table(self) -> dict[str, list[dict]]:
    best = lambda heap: [e for *_, e in sorted(heap, key=lambda i: i[:2],
                                               reverse=True)]
    return {"most_reference_like": best(self.high),
            "least_reference_like": best(self.low)}


# --- the pass over the file ---------------------------------------------------

def _checked(path: str, number: int, record: dict) -> float | None:
  """The record's ref_prob (None without one), after checking its types."""
  for key in ("reference", "translation"):
    if not isinstance(record[key], str):
      raise errors.DataError(f"{path}:{number}: {key} is not a string. "
                             + _FIX)
  if not isinstance(record["rank"], int):
    raise errors.DataError(f"{path}:{number}: rank is not an integer. "
                           + _FIX)
  scores = record.get("scores")
  value = scores.get("ref_prob") if isinstance(scores, dict) else None
  if value is not None and (isinstance(value, bool)
                            or not isinstance(value, (int, float))):
    raise errors.DataError(f"{path}:{number}: scores.ref_prob {value!r} is "
                           "not a number; rescore the file.")
  return value


def _best(path: str) -> Iterator[tuple[int, dict, float | None]]:
  """(line number, record, ref_prob) of every rank-0 record."""
  records = jsonl.iter_jsonl(path, keys=KEYS, fix=_FIX)
  for number, record in enumerate(records, start=1):  # one record a line
    ref_prob = _checked(path, number, record)
    if record["rank"] == 0:
      yield number, record, ref_prob


def analyze(path: str, examples: int = 5, idf: Idf | None = None) -> dict:
  """Tables 9-11 of the back-translation JSONL at `path` (module doc);
  `idf` defaults to `load_idf()`, read only when the file has ref_prob."""
  if examples < 0:
    raise errors.ConfigError(f"--examples {examples}: give 0 or more.")
  sides = {"reference": Side(), "translation": Side()}
  columns = [array.array("d") for _ in ("ref_prob", *MEASURES)]
  ends, pairs, with_ref_prob = Ends(examples), 0, None
  for number, record, ref_prob in _best(path):
    if with_ref_prob is None:
      with_ref_prob = ref_prob is not None
      idf = (idf or load_idf()) if with_ref_prob else None
    if with_ref_prob != (ref_prob is not None):
      raise errors.DataError(
          f"{path}:{number}: {'no' if with_ref_prob else 'a'} scores.ref_prob"
          f", unlike the first 1-best record: the file mixes two scorings. "
          "Rescore the whole file.")
    tokens = {k: words.tokenize(record[k]) for k in sides}
    for name, side in sides.items():
      side.add(tokens[name])
    if with_ref_prob:
      for column, value in zip(columns, (ref_prob, *measures(
          tokens["translation"], idf))):
        column.append(value)
      ends.add(number, float(ref_prob), {
          "line": number, "id": record.get("id"), "ref_prob": ref_prob,
          "reference": record["reference"],
          "translation": record["translation"]})
    pairs += 1
  if not pairs:
    raise errors.DataError(f"{path}: no 1-best (rank 0) record to analyze.")
  tables = {name: side.table() for name, side in sides.items()}
  report = {"input": path, "pairs": pairs, "table9": {
      **tables, "difference": {k: tables["reference"][k]
                               - tables["translation"][k] for k in _STATS}}}
  if not with_ref_prob:
    return {**report, "table10": None, "table11": None, "note": NO_REF_PROB}
  return {**report, "table10": {
      "idf": {"source": WORD_FREQ[-1], "formula": "ln(T / count)",
              "total": idf.total, "floor_count": idf.floor_count},
      **{m: correlation(columns[0], column)
         for m, column in zip(MEASURES, columns[1:])}},
          "table11": ends.table()}


# --- printing -----------------------------------------------------------------

def _number(value: float | None, spec: str) -> str:
  return "-" if value is None else format(value, spec)


_LABELS = {"reference": "reference", "translation": "translation",
           "difference": "reference - translation",
           "unigram_repetition": "unigram repetition",
           "trigram_repetition": "trigram repetition",
           "average_idf": "average IDF", "length": "length"}


def _row(label: str, cells: Iterable[str]) -> str:
  return f"{_LABELS.get(label, label):<24}" + "".join(f"{c:>9}" for c in cells)


def format_report(report: dict) -> str:
  lines = [f"Table 9: {report['pairs']} 1-best pairs (entropy in bits; "
           f"repetition in %, unigrams of {MIN_CHARS}+ characters)",
           _row("", ("uni H", "tri H", "uni rep", "tri rep"))]
  for side, row in report["table9"].items():
    lines.append(_row(side, (
        f"{row['unigram_entropy']:.3f}", f"{row['trigram_entropy']:.3f}",
        f"{100 * row['unigram_repetition']:.3f}",
        f"{100 * row['trigram_repetition']:.3f}")))
  if report["table10"] is None:
    return "\n".join(lines + ["", report["note"]])
  lines += ["", "Table 10: correlation with ref_prob (translations)",
            _row("", ("pearson", "spearman", "n"))]
  for m in MEASURES:
    row = report["table10"][m]
    lines.append(_row(m, (_number(row["pearson"], ".3f"),
                          _number(row["spearman"], ".3f"), str(row["n"]))))
  for end, rows in report["table11"].items():
    lines += ["", f"Table 11: {end.replace('_', ' ')}"]
    for e in rows:
      lines += [f"  ref_prob {e['ref_prob']:.4f}  (line {e['line']})",
                f"    reference:   {e['reference']}",
                f"    translation: {e['translation']}"]
  return "\n".join(lines)


def analyze_file(input: str, output: str | None = None, examples: int = 5,
                 overwrite: bool = False) -> dict:
  """`paraflax analyze-backtranslations`: prints Tables 9-11 of `input` and
  writes them to `output` as JSON (refused over another result unless
  `overwrite`)."""
  if output:
    files.check_output(output)
  report = analyze(input, examples)
  print(format_report(report))
  if output:
    files.write_once(output, json.dumps(report, indent=2, ensure_ascii=False)
                     + "\n", overwrite=overwrite)
  return report
