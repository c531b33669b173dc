"""MonoDS: rerank a paraphrase table by monolingual distributional
similarity (Chan, Callison-Burch & Van Durme 2011), from LSH signatures.

A phrase's context features are the word to its left (`L:w`) and the word
to its right (`R:w`) at each occurrence in the corpus (`<s>` and `</s>` at
the sentence edges), in the lowercased word tokens the tables use. The
corpus streams through once; each occurrence of a table phrase adds two
events to its signature sums (`paraflax.domain.lsh`).

RERANKED holds every pair of the table as `e1 ||| e2 ||| score ||| p=...
monods=...`, sorted by e1 then score: score = (1 - w) log p(e2|e1) +
w log max(monods, floor), w = monods.weight. A phrase the corpus never
holds has monods 0 (no evidence), i.e. the floor.
"""
from __future__ import annotations

import codecs
import gzip
import json
import logging
import os
import time
from collections.abc import Iterator, Sequence

import numpy as np

from paraflax import errors
from paraflax import files
from paraflax.data import corpora
from paraflax.data import words
from paraflax.domain import lsh
from paraflax.domain import table
from paraflax.training import partitioning

_EVENTS_PER_FLUSH = 1 << 20  # host events gathered before a device update


def iter_corpus(spec: str) -> Iterator[str]:
  """The lines of a text file (gzipped or not) one at a time, or the text
  of a registered monolingual Task (`mono_en_brown`)."""
  corpus = corpora.CORPORA.get(spec)
  if corpus is not None and corpus.features == corpora.MONO:
    yield from corpora.read(corpus, "train")["text"]
    return
  if not os.path.isfile(spec):
    raise errors.DataError(
        f"--corpus {spec}: not a file nor a monolingual Task (paraflax tasks: "
        "mono_en_*). Give one sentence per line, UTF-8, gzipped or not.")
  with open(spec, "rb") as f:
    gzipped = f.read(2) == b"\x1f\x8b"
  with (gzip.open if gzipped else open)(spec, "rb") as f:
    for number, raw in enumerate(f, start=1):
      try:
        yield raw.removeprefix(codecs.BOM_UTF8).decode("utf-8")
      except UnicodeDecodeError as e:
        raise errors.DataError(
            f"{spec}:{number}: not UTF-8 ({e.reason} at byte {e.start}). "
            "Re-encode the file as UTF-8.") from e


def context_events(sentences: Iterator[str], phrase_ids: dict[str, int],
                   max_len: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
  """(phrase ids, feature hashes) in batches: two events per occurrence of
  a phrase of `phrase_ids` (its left and its right word)."""
  hashes: dict[str, int] = {}

  def feature(f: str) -> int:
    h = hashes.get(f)
    if h is None:
      h = hashes[f] = lsh.feature_hash(f)
    return h

  ids: list[int] = []
  feats: list[int] = []
  for sentence in sentences:
    tokens = ["<s>", *words.tokenize(sentence), "</s>"]
    for i in range(1, len(tokens) - 1):
      gram = tokens[i]
      for n in range(1, max_len + 1):
        if i + n > len(tokens) - 1:
          break
        if n > 1:
          gram += " " + tokens[i + n - 1]
        pid = phrase_ids.get(gram)
        if pid is not None:
          ids += (pid, pid)
          feats += (feature("L:" + tokens[i - 1]),
                    feature("R:" + tokens[i + n]))
    if len(ids) >= _EVENTS_PER_FLUSH:
      yield np.asarray(ids, np.int32), np.asarray(feats, np.uint32)
      ids, feats = [], []
  if ids:
    yield np.asarray(ids, np.int32), np.asarray(feats, np.uint32)


def signatures(corpus: Sequence[str], phrases: Sequence[str], config
               ) -> tuple[np.ndarray, np.ndarray, dict]:
  """Packed signatures [phrases, bits / 8], occurrence counts [phrases]
  and throughput figures, over every `--corpus`."""
  m = config.monods
  hashing = lsh.make_hashing(m.bits, m.pool_bits, m.chunk_events, m.seed)
  mesh = partitioning.config_mesh(config)
  sigs = lsh.Signatures(len(phrases), hashing, mesh)
  phrase_ids = {p: i for i, p in enumerate(phrases)}
  max_len = max(len(p.split()) for p in phrases)
  seen = np.zeros(len(phrases), np.int64)
  start = time.perf_counter()
  for spec in corpus:
    for ids, feats in context_events(iter_corpus(spec), phrase_ids, max_len):
      sigs.add(ids, feats)
      seen += np.bincount(ids, minlength=len(phrases)) // 2
  packed = sigs.packed()
  seconds = time.perf_counter() - start
  stats = {"events": sigs.events, "seconds": seconds,
           "events_per_s": sigs.events / max(seconds, 1e-9),
           "devices": mesh.size, "phrases": len(phrases),
           "phrases_seen": int((seen > 0).sum())}
  return packed, seen, stats


def rerank(corpus: Sequence[str], table_path: str, output: str, config,
           overwrite: bool = False) -> dict:
  """`paraflax monods`: the table's pairs with MonoDS and the combined
  score, written whole (atomically) once every signature is made."""
  m = config.monods
  lsh.check_bits(m.bits)
  if not 0.0 <= m.weight <= 1.0 or m.floor <= 0:
    raise errors.ConfigError(f"monods.weight={m.weight} must lie in [0, 1] "
                             f"and monods.floor={m.floor} be positive.")
  files.check_output(output)
  entries = table.read_table(table_path)
  phrases = sorted({p for e1, es in entries.items()
                    for p in (e1, *(e.e2 for e in es))})
  index = {p: i for i, p in enumerate(phrases)}
  packed, seen, stats = signatures(corpus, phrases, config)
  pairs = [(e1, e) for e1 in sorted(entries) for e in entries[e1]]
  a = np.asarray([index[e1] for e1, _ in pairs])
  b = np.asarray([index[e.e2] for _, e in pairs])
  cos = np.where((seen[a] > 0) & (seen[b] > 0),
                 lsh.cosine(packed[a], packed[b], m.bits), 0.0)
  p = np.asarray([e.score for _, e in pairs])
  score = ((1 - m.weight) * np.log(np.maximum(p, 1e-300))
           + m.weight * np.log(np.maximum(cos, m.floor)))
  # Sorted by e1 (the pairs' order), then score, then e2.
  order = sorted(range(len(pairs)),
                 key=lambda i: (pairs[i][0], -score[i], pairs[i][1].e2))
  lines = [table.format_line(pairs[i][0], pairs[i][1].e2, score[i],
                             (("p", p[i]), ("monods", cos[i])))
           for i in order]
  files.write_once(output, "".join(lines), overwrite=overwrite)
  files.write_text_atomic(output + ".summary.json",
                          json.dumps(stats, indent=2) + "\n")
  logging.info("%s", stats)
  print(f"{output}: {len(lines)} pairs reranked; {stats['events']} context "
        f"events at {stats['events_per_s']:.0f}/s on {stats['devices']} "
        f"device(s); {stats['phrases_seen']} of {stats['phrases']} phrases "
        "seen in the corpus")
  return stats
