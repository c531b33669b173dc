"""A seq2seq recipe's training bitext, streamed from its Tasks.

The pairs are read chunk by chunk: once into the subword models' sample
(`sentencepiece_vocab.pair`, only when the workdir has no models yet),
once into the workdir's encoded cache (`bitext.cached`:
`data_cache/bitext/`, subword ids of each kept pair, built as
`encoded_cache` builds, rebuilt when the files, the models, max_len or
too_long change), and batches read their rows from there
(`bitext.BucketStream`). The dev pairs are checked against the first
stream that is read whole (`specs.DevOverlap`). Memory holds the sample
(at most `sentencepiece_vocab.SAMPLE_PAIRS` pairs) and the order of the
epoch under way (4 bytes a pair), not the corpus.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import ml_collections

from paraflax.data import bitext
from paraflax.data import encoded_cache
from paraflax.data import english_side
from paraflax.data import sentencepiece_vocab
from paraflax.data import specs
from paraflax.data import tasks

_CHUNK = 4096
Chunks = Callable[[], Iterator[list[tuple[str, str]]]]


def reader(names: Sequence[str], features: Sequence[str],
           split: str = "train") -> Chunks:
  """The (features[0], features[1]) pairs of the Tasks `names`, one after
  another, a chunk at a time, each call a new pass."""
  first, second = features

  def read() -> Iterator[list[tuple[str, str]]]:
    for name in names:
      for chunk in tasks.iter_examples(name, split, chunk=_CHUNK):
        yield [(e[first], e[second]) for e in chunk]
  return read


def _within(read: Chunks, max_words: int) -> Chunks:
  """`read`'s pairs whose sides have at most `max_words` tokens each."""
  def within() -> Iterator[list[tuple[str, str]]]:
    for chunk in read():
      yield [p for p in chunk
             if len(p[0].split()) <= max_words
             and len(p[1].split()) <= max_words]
  return within


def cache_settings(config: ml_collections.ConfigDict, names: Sequence[str],
                   models: Sequence[Any], **extra: Any) -> dict[str, Any]:
  """What encoded ids are made from: the Tasks' files (sizes and times),
  the subword models, max_len and too_long."""
  return {"train": list(names),
          "files": [encoded_cache.stamp_of(tasks.source_files(n, "train"))
                    for n in names],
          "models": [hashlib.sha256(sp.serialized_model_proto()).hexdigest()
                     for sp in models],
          "max_len": config.data.max_len, "too_long": config.data.too_long,
          **extra}


def train_bitext(config: ml_collections.ConfigDict, workdir: str,
                 features: Sequence[str], dev: Sequence[tuple[str, str]]
                 ) -> tuple[bitext.EncodedBitext, Any, Any]:
  """The training pairs of `config.data.train` (their `features` as the
  model's source and target) read from the workdir's encoded cache, and
  the (source, target) subword models."""
  names = specs.train_specs(config.data)
  for spec in names:  # before the subwords are trained on them
    english_side.check(spec, "data.train:")
  read = reader(names, features)
  # data.max_words (absent or 0: no limit): pairs with a side of more
  # whitespace tokens are left out of training and of the subword sample.
  max_words = config.data.get("max_words", 0)
  if max_words:
    read = _within(read, max_words)
  overlap = specs.DevOverlap(dev, config.data.dev,
                             config.data.allow_dev_overlap)
  src_sp, tgt_sp = sentencepiece_vocab.pair(
      workdir, (p for chunk in overlap.watch(read()) for p in chunk),
      **config.vocab.to_dict())
  cache = bitext.cached(
      encoded_cache.folder(workdir, "bitext"),
      cache_settings(config, names, (src_sp, tgt_sp),
                     features=list(features),
                     **({"max_words": max_words} if max_words else {})),
      lambda: overlap.watch(read()), src_sp.encode, tgt_sp.encode,
      config.data.max_len, config.data.too_long, "train")
  return bitext.EncodedBitext(cache["src"], cache["tgt"]), src_sp, tgt_sp
