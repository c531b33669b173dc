"""A block of a bitext aligned and its phrase pairs counted, and the part
file (`TABLE.parts/<lang>-<block>.npz`) that keeps them.

A block's (foreign, English) pairs are tokenized, aligned by eflomal with
grow-diag-final-and (`alignment`) and their phrase pairs counted
(`phrases`); the part holds its English and foreign phrases in id order,
the (English id, foreign id, count) of each pair and the block's stats.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import numpy as np

from paraflax import files
from paraflax.data import words
from paraflax.domain import alignment
from paraflax.domain import phrases


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


def save_block(path: str, counts: phrases.PhraseCounts,
               stats: BlockStats) -> None:
  m = counts.matrix().tocoo()
  with files.atomic_output(path) as f:
    np.savez(f, english="\n".join(counts.english), foreign="\n".join(
        counts.foreign), e=m.row.astype(np.int32), f=m.col.astype(np.int32),
             count=m.data.astype(np.int32),
             stats=np.asarray(dataclasses.astuple(stats), np.float64))


def block_phrases(path: str, side: str) -> list[str]:
  """A part's English or foreign phrases, in id order."""
  with np.load(path) as z:
    return str(z[side]).split("\n") if z["e"].size else []


def block_stats(path: str) -> BlockStats:
  with np.load(path) as z:
    return BlockStats(*(t(v) for t, v in zip(
        (int, int, float, int, float), z["stats"])))


def block_arrays(path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """A part's counts: (English id, foreign id, count) of each pair."""
  with np.load(path) as z:
    return z["e"], z["f"], z["count"]
