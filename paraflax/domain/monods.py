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

import json
import logging
import os
import time
from collections.abc import Iterator, Sequence

import numpy as np

from paraflax import errors
from paraflax import files
from paraflax.data import corpora
from paraflax.data import readers
from paraflax.data import words
from paraflax.domain import lsh
from paraflax.domain import table
from paraflax.training import distributed
from paraflax.training import partitioning

_EVENTS_PER_FLUSH = 1 << 20  # host events gathered before a device update
_LINES_PER_WRITE = 100_000  # table lines reranked at a time


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
  yield from readers.iter_lines(spec)


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


def _phrases(table_path: str) -> list[str]:
  """Every e1 and e2 of the table, sorted; reads (and checks) it all."""
  found: set[str] = set()
  lines = 0
  for group in table.iter_groups(table_path):
    found.add(group[0].e1)
    found.update(e.e2 for e in group)
    lines += len(group)
  if not lines:
    raise errors.DataError(f"{table_path}: the table has no lines.")
  return sorted(found)


def combined_score(p, cos, weight: float, floor: float) -> np.ndarray:
  """(1 - weight) log p + weight log max(cos, floor): RERANKED's score."""
  return ((1 - weight) * np.log(np.maximum(p, 1e-300))
          + weight * np.log(np.maximum(cos, floor)))


def _reranked_lines(groups: list[list[table.Entry]], index: dict[str, int],
                    packed: np.ndarray, seen: np.ndarray, m) -> str:
  """The lines of some e1 groups, each group sorted by the new score."""
  entries = [e for g in groups for e in g]
  a = np.asarray([index[e.e1] for e in entries])
  b = np.asarray([index[e.e2] for e in entries])
  cos = np.where((seen[a] > 0) & (seen[b] > 0),
                 lsh.cosine(packed[a], packed[b], m.bits), 0.0)
  p = np.asarray([e.score for e in entries])
  score = combined_score(p, cos, m.weight, m.floor)
  group_of = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
  e2_rank = np.asarray([index[e.e2] for e in entries])  # index is sorted
  order = np.lexsort((e2_rank, -score, group_of))
  return "".join(table.format_line(entries[i].e1, entries[i].e2, score[i],
                                   (("p", p[i]), ("monods", cos[i])))
                 for i in order.tolist())


def rerank(corpus: Sequence[str], table_path: str, output: str, config,
           overwrite: bool = False, **cluster) -> dict:
  """`paraflax monods`: the table's pairs with MonoDS and the combined
  score. Three streaming passes: the table's phrases (every line checked
  before any work), the corpus into the signatures, the table again into
  RERANKED (written atomically: whole or not at all). `cluster`: one of
  several processes (`training.distributed.join`), whose devices share
  the signature bits; every process reads the inputs, process 0 writes."""
  m = config.monods
  lsh.check_bits(m.bits)
  if not 0.0 <= m.weight <= 1.0 or m.floor <= 0:
    raise errors.ConfigError(f"monods.weight={m.weight} must lie in [0, 1] "
                             f"and monods.floor={m.floor} be positive.")
  files.check_output(output)
  distributed.join(**cluster)
  phrases = _phrases(table_path)
  written = os.path.exists(output)
  if distributed.is_primary():
    files.claim_output(output, {"table": os.path.abspath(table_path),
                                "corpus": list(corpus),
                                "monods": m.to_dict()}, overwrite=overwrite)
  distributed.barrier("monods.claimed")
  if written and not overwrite:
    print(f"{output}: already written with these settings.")
    return {}
  index = {p: i for i, p in enumerate(phrases)}
  packed, seen, stats = signatures(corpus, phrases, config)
  if not distributed.is_primary():
    return stats
  start, lines = time.perf_counter(), 0
  with files.atomic_output(output, "w") as out:
    groups: list[list[table.Entry]] = []
    pending = 0
    for group in table.iter_groups(table_path):
      groups.append(group)
      pending += len(group)
      if pending >= _LINES_PER_WRITE:
        out.write(_reranked_lines(groups, index, packed, seen, m))
        lines += pending
        groups, pending = [], 0
    if groups:
      out.write(_reranked_lines(groups, index, packed, seen, m))
      lines += pending
  stats.update(pairs=lines, rerank_s=time.perf_counter() - start)
  files.write_text_atomic(output + ".summary.json",
                          json.dumps(stats, indent=2) + "\n")
  logging.info("%s", stats)
  print(f"{output}: {lines} pairs reranked; {stats['events']} context "
        f"events at {stats['events_per_s']:.0f}/s on {stats['devices']} "
        f"device(s); {stats['phrases_seen']} of {stats['phrases']} phrases "
        "seen in the corpus")
  return stats
