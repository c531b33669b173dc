"""Word-level tokenisation and vocabulary (Wieting's encoders use words).

Ids: 0 is padding, 1 is the unknown word; real words start at 2, most
frequent first, ties broken alphabetically so a vocabulary is a pure function
of its corpus.
"""
from __future__ import annotations

import collections
import os
import re
from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from paraflax import errors
from paraflax import files
from paraflax.data import readers

PAD, UNK = 0, 1
_SPECIALS = ("<pad>", "<unk>")
# Words, numbers and single punctuation marks; the corpora mix tokenised and
# raw text, and this split makes both look alike.
_TOKEN = re.compile(r"\w+(?:[-'’]\w+)*|[^\w\s]", re.UNICODE)


def tokenize(text: str) -> list[str]:
  return _TOKEN.findall(text.lower())


class WordVocab:
  """A frozen word -> id map with the counts it was built from."""

  def __init__(self, words: Sequence[str], counts: Sequence[int]):
    self.words = tuple(words)
    self.counts = tuple(counts)
    self._ids = {w: i for i, w in enumerate(self.words)}

  def __len__(self) -> int:
    return len(self.words)

  @classmethod
  def build(cls, texts: Iterable[str], *, min_count: int = 1,
            max_size: int | None = None, extra: Iterable[str] = ()
            ) -> "WordVocab":
    """The words of `texts`, then the `extra` words they lack (count 0, in
    the given order): a vector file's words, so that words of the test sets
    that training never saw keep their vectors instead of becoming <unk>."""
    counter = collections.Counter(t for s in texts for t in tokenize(s))
    ranked = sorted((w for w, c in counter.items() if c >= min_count),
                    key=lambda w: (-counter[w], w))
    if max_size is not None:
      ranked = ranked[:max_size - len(_SPECIALS)]
    known = set(ranked).union(_SPECIALS)
    added = tuple(w for w in dict.fromkeys(extra) if w not in known)
    return cls(_SPECIALS + tuple(ranked) + added,
               (0, 0) + tuple(counter[w] for w in ranked) + (0,) * len(added))

  def id_of(self, word: str) -> int | None:
    return self._ids.get(word)

  def encode(self, text: str) -> list[int]:
    return [self._ids.get(t, UNK) for t in tokenize(text)]

  def encode_batch(self, texts: Sequence[str], max_len: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Padded ids [N, max_len] and lengths [N]; longer texts are truncated."""
    ids = np.zeros((len(texts), max_len), np.int32)
    lengths = np.zeros((len(texts),), np.int32)
    for row, text in enumerate(texts):
      seq = self.encode(text)[:max_len]
      ids[row, :len(seq)] = seq
      lengths[row] = len(seq)
    return ids, lengths

  def save(self, path: str | os.PathLike) -> None:
    lines = (f"{w}\t{c}" for w, c in zip(self.words, self.counts))
    files.write_text_atomic(path, "\n".join(lines) + "\n")

  @classmethod
  def load(cls, path: str | os.PathLike) -> "WordVocab":
    lines, _ = readers.read_lines(path)
    words, counts = [], []
    for number, line in enumerate(lines, start=1):
      word, tab, count = line.rpartition("\t")
      if not tab or not count.isdigit():
        raise errors.DataError(f"{path}:{number}: expected `word<TAB>count`;"
                                " the vocabulary file is corrupt, retrain.")
      words.append(word)
      counts.append(int(count))
    if tuple(words[:2]) != _SPECIALS:
      raise errors.DataError(f"{path}: must start with {_SPECIALS}.")
    return cls(words, counts)


def _vector_lines(path: str | os.PathLike
                  ) -> Iterator[tuple[int, list[str]]]:
  """(line number, [word, numbers...]) of a GloVe / word2vec text file,
  without the word2vec header line (`count dim`)."""
  lines, _ = readers.read_lines(path, empty="drop")
  for number, line in enumerate(lines, start=1):
    parts = line.rstrip().split(" ")
    if number == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
      continue
    yield number, parts


def vector_words(path: str | os.PathLike) -> list[str]:
  """The (lowercased) words of a vector file, in file order."""
  return [parts[0].lower() for _, parts in _vector_lines(path)]


def save_word_vectors(path: str | os.PathLike, vocab: WordVocab,
                      table: np.ndarray) -> None:
  """word2vec text format (a `count dim` header), the real words only (not
  <pad> / <unk>), in vocabulary order; `load_word_vectors` reads it."""
  rows = [f"{w} {' '.join(f'{x:.6g}' for x in table[i])}"
          for i, w in enumerate(vocab.words) if i >= len(_SPECIALS)]
  header = f"{len(rows)} {table.shape[1]}"
  files.write_text_atomic(path, "\n".join([header] + rows) + "\n")


def load_word_vectors(path: str | os.PathLike, vocab: WordVocab,
                      dim: int) -> tuple[np.ndarray, np.ndarray]:
  """Reads GloVe / word2vec text vectors for the words of `vocab`.

  Returns the [V, dim] matrix (rows of words not in the file stay zero) and a
  boolean mask of the rows that were found. A word2vec header line
  (`count dim`) is skipped.
  """
  table = np.zeros((len(vocab), dim), np.float32)
  found = np.zeros((len(vocab),), bool)
  for number, parts in _vector_lines(path):
    if len(parts) != dim + 1:
      raise errors.DataError(
          f"{path}:{number}: expected a word and {dim} numbers, found "
          f"{len(parts) - 1} numbers. Set model.word_dim to the file's "
          "dimension.")
    index = vocab.id_of(parts[0].lower())
    if index is None or found[index]:
      continue  # first (most frequent) casing wins
    try:
      table[index] = np.asarray(parts[1:], np.float32)
    except ValueError as e:
      raise errors.DataError(f"{path}:{number}: non-numeric vector value.") \
          from e
    found[index] = True
  return table, found


def fill_missing(table: np.ndarray, found: np.ndarray, seed: int
                 ) -> np.ndarray:
  """`load_word_vectors`' table with the words absent from the vector file
  drawn at random, at the file's scale."""
  rng = np.random.default_rng(seed)
  scale = table[found].std() if found.any() else 0.1
  table = table.copy()
  table[~found] = rng.normal(0, scale, (int((~found).sum()), table.shape[1]))
  return table.astype(np.float32)
