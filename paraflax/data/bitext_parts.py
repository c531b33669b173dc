"""A recipe's training pairs in `data.parts` parts, each process of a run
reading, encoding and caching only its own: the bitext of the NMT and
bilingual recipes (here), the bilingual recipe's monolingual text and
the pairs of the paraphrase recipe (`reader` here; the streams
`bilingual.build`'s and `pairs.PartedMegabatches`).

The training pairs of `data.train` are split into S = `data.parts`
parts, spec after spec: part p holds the files k with k mod S == p of a
spec of at least S files (the others are not opened), and the pairs i
with i mod S == p of any other spec. Process i of P (S a multiple of P)
owns the parts [i S/P, (i+1) S/P): it encodes only their pairs, each
into its own folder of the workdir's encoded cache
(`data_cache/bitext-part{p}of{S}/`), and draws batch_size / S rows a
batch from each (`bitext.BucketStream` keyed by (seed, part)). Its
parts' rows, in part order, are its block of the global batch (the
block `partitioning.put_batch(local=True)` places), so the global batch
is a pure function of (seed, step, S), whatever P. Every batch is padded
to data.max_len's width: no process knows the lengths of the other
parts' rows. The subword models are trained on a seeded sample of part
0's pairs, the same in every process and for any P. With data.parts = 1
none of this applies (`streamed_bitext`).
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Sequence
from typing import Any

import ml_collections
import numpy as np

from paraflax import errors
from paraflax import files
from paraflax.data import batching
from paraflax.data import bitext
from paraflax.data import corpora
from paraflax.data import encoded_cache
from paraflax.data import english_side
from paraflax.data import sentencepiece_vocab
from paraflax.data import specs
from paraflax.data import streamed_bitext
from paraflax.data import tasks


def count(config: ml_collections.ConfigDict) -> int:
  """`data.parts`, checked (absent: 1, the whole corpus in every
  process)."""
  parts = config.data.get("parts", 1)
  if not isinstance(parts, int) or isinstance(parts, bool) or parts < 1:
    raise errors.ConfigError(
        f"data.parts={parts!r}: a positive number of parts the training "
        "pairs are split into (1: every process reads them all).")
  if parts > 1 and config.batch_size % parts:
    raise errors.ConfigError(
        f"data.parts={parts} does not divide batch_size="
        f"{config.batch_size}: a batch takes batch_size / data.parts rows "
        "from each part.")
  return parts


def unsplit(config: ml_collections.ConfigDict, key: str, why: str
            ) -> None:
  """ConfigError when data.parts > 1 and `data.<key>` is set: data the
  parts do not split (`why`), that every process would read whole."""
  value = config.data.get(key)
  if count(config) > 1 and value:
    raise errors.ConfigError(
        f"data.parts={config.data.parts} with data.{key}={value!r}: {why}, "
        f"so every process would read it whole. Unset it (--config.data."
        f"{key}={'()' if isinstance(value, tuple) else chr(39) * 2}) or set "
        "--config.data.parts=1.")


def owned(parts: int, process: tuple[int, int]) -> range:
  """The parts process (index, count) reads: a contiguous run of
  parts / count of them."""
  index, processes = process
  if parts % processes:
    raise errors.ConfigError(
        f"data.parts={parts} is not a multiple of the {processes} "
        "processes of the run: each process reads data.parts / processes "
        "parts. Set data.parts to a multiple of the process count.")
  per = parts // processes
  return range(index * per, (index + 1) * per)


def part_of(read: streamed_bitext.Chunks, part: int, parts: int
            ) -> streamed_bitext.Chunks:
  """The pairs i of `read()` with i mod `parts` == `part`, a chunk at a
  time."""
  def chunks() -> Iterator[list[tuple[str, str]]]:
    first = 0
    for chunk in read():
      kept = chunk[(part - first) % parts::parts]
      first += len(chunk)
      if kept:
        yield kept
  return chunks


def _files_part(name: str, part: int, parts: int, split: str = "train"
                ) -> str | None:
  """The Task of files k of spec (or catalogued corpus) `name` with
  k mod `parts` == `part`, registered; None when it has fewer files than
  parts (or is read whole to drop repeats, or is no corpus of files)."""
  if name.startswith((tasks.BACKTRANSLATED, tasks.SELECTED)):
    return None
  task, split = tasks.resolve(name, split)
  if specs.is_spec(name) or ":" in name:
    corpus = specs.parse(name, corpora.BITEXT, split).corpus
  else:
    corpus = corpora.CORPORA.get(task)
  spec = corpus.splits.get(split) if corpus is not None else None
  if (spec is None or spec.dedup or len(spec.parts) < parts
      or corpus.name != task):
    return None
  mine = dataclasses.replace(corpus, name=f"{corpus.name}_files{part}of"
                             f"{parts}", splits={split: dataclasses.replace(
                                 spec, parts=spec.parts[part::parts])})
  return tasks.register_corpus(mine) + ":" + split


def reader(names: Sequence[str], features: Sequence[str], part: int,
           parts: int, split: str = "train") -> streamed_bitext.Chunks:
  """Part `part` of `parts` of the pairs (`features`) of the `split` of
  `names`, spec after spec: of
  a spec of at least `parts` files, the files k with k mod parts == part
  (the others are not opened); of any other, its pairs i with i mod
  parts == part."""
  def read() -> Iterator[list[tuple[str, str]]]:
    for name in names:
      task_split = _files_part(name, part, parts, split)
      if task_split is None:
        yield from part_of(streamed_bitext.reader([name], features, split),
                           part, parts)()
      else:
        yield from _registered_reader(task_split, features)()
  return read


def _registered_reader(task_split: str, features: Sequence[str]
                       ) -> streamed_bitext.Chunks:
  task, split = task_split.rsplit(":", 1)
  return streamed_bitext.reader([task], features, split)


def folder(workdir: str, part: int, parts: int) -> str:
  return encoded_cache.folder(workdir, f"bitext-part{part}of{parts}")


def train_parts(config: ml_collections.ConfigDict, workdir: str,
                features: Sequence[str], dev: Sequence[tuple[str, str]],
                mine: Sequence[int]
                ) -> tuple[list[bitext.EncodedBitext], Any, Any]:
  """The encoded pairs of each part of `mine` (read from its cache,
  built first from that part's pairs alone) and the subword models
  (trained, when the workdir has none, on a sample of part 0)."""
  parts = count(config)
  names = specs.train_specs(config.data)
  for spec in names:  # before the subwords are trained on them
    english_side.check(spec, "data.train:")
  max_words = config.data.get("max_words", 0)

  def read(part: int) -> streamed_bitext.Chunks:
    pairs = reader(names, features, part, parts)
    if max_words:
      pairs = streamed_bitext._within(pairs, max_words)  # pylint: disable=protected-access
    return pairs

  first = read(0)
  # The processes that share the workdir train the models once: the
  # others wait, then load them (hosts that do not share it each train
  # the same models from part 0).
  lock = encoded_cache.folder(workdir, "subwords") + ".lock"
  os.makedirs(os.path.dirname(lock), exist_ok=True)
  with files.waiting_lock(lock):
    src_sp, tgt_sp = sentencepiece_vocab.pair(
        workdir, (p for chunk in first() for p in chunk),
        **config.vocab.to_dict())
  out = []
  for part in mine:
    # Each process checks the dev pairs against its own parts.
    overlap = specs.DevOverlap(dev, config.data.dev,
                               config.data.allow_dev_overlap)
    pairs = read(part)
    cache = bitext.cached(
        folder(workdir, part, parts),
        streamed_bitext.cache_settings(
            config, names, (src_sp, tgt_sp), features=list(features),
            part=[part, parts],
            **({"max_words": max_words} if max_words else {})),
        lambda pairs=pairs, overlap=overlap: overlap.watch(pairs()),
        src_sp.encode, tgt_sp.encode, config.data.max_len,
        config.data.too_long, f"train part {part} of {parts}")
    out.append(bitext.EncodedBitext(cache["src"], cache["tgt"]))
  return out, src_sp, tgt_sp


@dataclasses.dataclass(eq=False)
class PartedStream:
  """This process's block of each global batch: batch / parts rows from
  each of its parts' streams, in part order, padded to `width` and to the
  block's rows (`batching.process_block`)."""
  streams: Sequence[bitext.BucketStream]  # one per owned part
  batch: int
  shards: int
  width: int
  width_multiple: int
  process: tuple[int, int] = (0, 1)

  def __post_init__(self):
    batching.process_block(self.batch, self.shards, self.process)

  def rows(self, step: int) -> list[tuple[int, np.ndarray]]:
    """(owned part's index in `streams`, its rows) of batch `step`."""
    return [(k, s.rows(step)) for k, s in enumerate(self.streams)]

  def get(self, step: int) -> dict[str, np.ndarray]:
    _, block = batching.process_block(self.batch, self.shards, self.process)
    src, tgt = [], []
    for k, rows in self.rows(step):
      data = self.streams[k].data
      src += [data.src[i] for i in rows]
      tgt += [data.tgt[i] for i in rows]
    return bitext.padded_batch(src, tgt, block, self.width,
                               self.width_multiple)

  def from_step(self, step: int) -> Iterator[dict[str, np.ndarray]]:
    while True:
      yield self.get(step)
      step += 1


def train_stream(config: ml_collections.ConfigDict, workdir: str,
                 features: Sequence[str], dev: Sequence[tuple[str, str]],
                 shards: int, process: tuple[int, int]
                 ) -> tuple[PartedStream, Any, Any]:
  """The NMT recipe's batches from this process's parts, and the subword
  models."""
  mine = owned(count(config), process)
  data, src_sp, tgt_sp = train_parts(config, workdir, features, dev, mine)
  return parted_stream(config, data, mine, shards, process,
                       config.data.sort_by), src_sp, tgt_sp


def parted_stream(config: ml_collections.ConfigDict,
                  data: Sequence[bitext.EncodedBitext], mine: Sequence[int],
                  shards: int, process: tuple[int, int], sort_by: str
                  ) -> PartedStream:
  """This process's block of each global batch of the parts `mine`
  (`data`, one EncodedBitext each), each part's windows sorted by
  `sort_by`: two streams of the same lengths and `sort_by` "target" give
  their rows in one order (the bilingual recipe's pairs and their
  autoencoded targets)."""
  parts, multiple = count(config), bitext.width_multiple(config)
  streams = [bitext.BucketStream(d, config.batch_size // parts, 1,
                                 config.seed, sort_by=sort_by,
                                 width_multiple=multiple, part=part)
             for d, part in zip(data, mine)]
  return PartedStream(streams, config.batch_size, shards,
                      config.data.max_len, multiple, process)
