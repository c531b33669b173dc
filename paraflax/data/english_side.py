"""Whether the English side of a user's bitext looks English: a cheap look
at a TSV's first rows (the script of its letters, English function words),
not a language identifier. It catches the columns of a TSV swapped, which
would otherwise train a model of the wrong direction without a word."""
from __future__ import annotations

import itertools
import unicodedata
from collections.abc import Sequence

from paraflax import errors
from paraflax.data import corpora
from paraflax.data import specs

# Rows of a TSV whose English column `check` reads.
_SAMPLE = 1000
# Source words below which the function-word count says nothing.
_MIN_WORDS = 20
_ENGLISH_WORDS = frozenset(
    "the a an of and to is are was in on at with for by this that".split())


def _latin_share(texts: Sequence[str]) -> float:
  letters = [c for text in texts for c in text if c.isalpha()]
  latin = sum(unicodedata.name(c, "").startswith("LATIN") for c in letters)
  return latin / len(letters) if letters else 1.0


def _english_word_share(texts: Sequence[str]) -> float:
  words = [w.strip(".,;:!?\"'()").lower() for t in texts for w in t.split()]
  return sum(w in _ENGLISH_WORDS for w in words) / max(len(words), 1)


def not_english(pairs: Sequence[tuple[str, str]]) -> str | None:
  """Why the English side of (source, English) `pairs` does not look
  English, or None: mostly letters of another script, or fewer English
  function words (the, of, and, ...) than the source side has."""
  source = [s for s, _ in pairs]
  english = [e for _, e in pairs]
  latin = _latin_share(english)
  if latin < 0.5 and latin < _latin_share(source):
    return f"{latin:.0%} of its letters are Latin"
  if sum(len(t.split()) for t in source) < _MIN_WORDS:
    return None  # too few words to count function words in
  ours, theirs = _english_word_share(english), _english_word_share(source)
  if theirs > max(2 * ours, 0.05):
    return (f"English function words (the, of, and, ...) are {ours:.0%} of "
            f"its words and {theirs:.0%} of the first column's")
  return None


def check(spec: str, what: str) -> None:
  """A tsv: spec without :COLUMNS whose second column (English, by the
  spec's rule) does not look English is refused, naming both fixes: the
  columns swapped (tsv:F:1,0) or, English after all, named as they are
  (tsv:F:0,1: named columns are not checked)."""
  if not spec.startswith(specs.TSV) or specs.named_columns(spec):
    return
  data = specs.parse(spec)
  rows = itertools.islice(corpora.iter_rows(data.corpus, data.split),
                          _SAMPLE)
  why = not_english([(r[0], r[1]) for r in rows])
  if why:
    body = spec[len(specs.TSV):]
    raise errors.ConfigError(
        f"{what} {spec}: its second column, the English one, does not look "
        f"English ({why}). If English is the first column, name the "
        f"columns: tsv:{body}:1,0; if the second is English after all, "
        f"name them as they are: tsv:{body}:0,1.")
