"""One side of a bitext to mine: its embedding files (one, or shards read
in path order as one corpus, each memory-mapped), their sentences when
given, and its distinct sentences (duplicates found across every shard).
"""
from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence

import numpy as np

from paraflax import errors
from paraflax.data import readers
from paraflax.mining import embeddings_io
from paraflax.mining import index_build
from paraflax.mining import margin

@dataclasses.dataclass(frozen=True)
class Side:
  """One side of the bitext: embeddings and, if given, the sentences."""
  emb: np.ndarray | embeddings_io.Shards  # [N, d], possibly memory-mapped
  texts: list[str] | None
  name: str  # the file (or pattern) that error messages name
  fingerprint: str  # changes whenever `emb` does
  shard_prints: tuple[str, ...] = ()  # each file's fingerprint, in order


def load_sides(emb_paths: Sequence[str], dim: int | None, fp16: bool,
               text_paths: Sequence[str | None]) -> tuple[Side, Side]:
  """LASER embedding files, with their text files when given; each path
  may be a glob of shards (`embeddings_io.read_shards`), its texts a glob
  of as many text files, the i-th text file holding the i-th shard's
  sentences (both in path order)."""
  if None in emb_paths:
    raise errors.ConfigError("give --src-emb and --tgt-emb (with --dim), or "
                             "--workdir with the text files to embed them.")
  if (text_paths[0] is None) != (text_paths[1] is None):
    raise errors.ConfigError("give both --src-text and --tgt-text, or "
                             "neither (then pairs are line numbers).")
  src, tgt = (load_side(e, dim, fp16, t)
              for e, t in zip(emb_paths, text_paths))
  return src, tgt


def load_side(emb_pattern: str, dim: int | None, fp16: bool,
              text_pattern: str | None) -> Side:
  emb, emb_paths = embeddings_io.read_shards(emb_pattern, dim, fp16=fp16)
  prints = tuple(embeddings_io.fingerprint(p) for p in emb_paths)
  if len(emb_paths) == 1:
    name, fingerprint = emb_paths[0], prints[0]
  else:
    name = emb_pattern
    fingerprint = hashlib.sha256("\n".join(prints).encode()).hexdigest()
  if text_pattern is None:
    return Side(emb, None, name, fingerprint, prints)
  text_paths = embeddings_io.expand(text_pattern, "text file")
  if len(text_paths) != len(emb_paths):
    raise errors.DataError(
        f"{text_pattern} names {len(text_paths)} text file(s) but "
        f"{emb_pattern} {len(emb_paths)} embedding file(s): give one text "
        "file per shard, named so that both sort in the same order.")
  texts = []
  for text_path, emb_path, (start, stop) in zip(
      text_paths, emb_paths, index_build.shard_bounds(emb)):
    texts += _load_texts(text_path, emb_path, stop - start, emb.shape[1])
  return Side(emb, texts, name, fingerprint, prints)


def _load_texts(text_path: str, emb_path: str, rows: int, dim: int
                ) -> list[str]:
  """The sentences of one embedding file, one per row."""
  # LASER embeds an empty line like any other: it has a row.
  texts, _ = readers.read_lines(text_path, empty="keep")
  tabbed = [n for n, t in enumerate(texts, start=1) if "\t" in t]
  if tabbed:
    raise errors.DataError(
        f"{text_path}:{tabbed[0]}: a tab inside a sentence ({len(tabbed)} "
        "line(s)); the mined TSV separates its columns by tabs. Replace "
        "the tabs with spaces (embed that text again), or mine without "
        "--src-text/--tgt-text (then pairs are line numbers).")
  if len(texts) != rows:
    raise errors.DataError(
        f"{text_path} has {len(texts)} lines but {emb_path} holds "
        f"{rows} embeddings of dim {dim}: the text needs one "
        "line per "
        "embedding, in order. Pass the text the file was embedded from "
        "(and check --dim and --fp16).")
  return texts


def unique(side: Side) -> tuple[np.ndarray | None, np.ndarray]:
  """The rows of the side's distinct sentences (their first lines; None:
  every row) and, per line, the index of its sentence among them."""
  unique, inverse = margin.deduplicate(side.texts)
  if len(unique) == len(side.texts):
    return None, inverse  # no copy of a memory-mapped file
  return np.unique(inverse, return_index=True)[1], inverse
