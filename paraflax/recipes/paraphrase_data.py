"""The paraphrase recipe's training pairs: the Tasks `config.data` names
(a Task, a Mixture, or Tasks mixed by rate; back-translated pairs through
`data.filter`), streamed once into a counted vocabulary and the workdir's
encoded cache, read back as megabatches; with `data.parts`, only this
process's parts."""
from __future__ import annotations

import collections
import contextlib
import os
from collections.abc import Iterator, Sequence
from typing import Any

import ml_collections
from jax.sharding import Mesh

from paraflax import errors
from paraflax.data import encoded_cache
from paraflax.data import pairs as pairs_lib
from paraflax.data import words
from paraflax.training import partitioning

_CHUNK = 4096  # pairs encoded and written at a time


def _task(config: ml_collections.ConfigDict) -> str:
  """The Task `config.data` names: a back-translation JSONL gets its own,
  through `data.filter` and `data.max_pairs`; a catalogued Task has none."""
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  data_filter = config.data.get("filter")
  if isinstance(data_filter, ml_collections.ConfigDict):
    data_filter = data_filter.to_dict()
  max_pairs = config.data.get("max_pairs", 0)
  if config.data.task.startswith(tasks.BACKTRANSLATED):
    return tasks.register_backtranslated(
        config.data.task[len(tasks.BACKTRANSLATED):], data_filter, max_pairs,
        config.seed)
  return config.data.task


def _check_task(name: str, key: str) -> None:
  from paraflax.data import corpora  # pylint: disable=g-import-not-at-top
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  if not (name in corpora.catalogue() or name.startswith(tasks.BACKTRANSLATED)):
    raise errors.ConfigError(
        f"{key}: {name!r} is not a registered Task or Mixture; `paraflax "
        "tasks` lists them (e.g. paraphrase_en_human), or use "
        "backtranslated:OUT.jsonl for `paraflax backtranslate` output.")


def check(config: ml_collections.ConfigDict) -> None:
  """The pairs `config.data` names, from the config alone: a Task (with
  data.filter and data.max_pairs only for back-translated pairs), or a
  mixture of (Task, rate) members; data.parts and what it cannot split."""
  from paraflax.data import bitext_parts  # pylint: disable=g-import-not-at-top
  from paraflax.data import filters  # pylint: disable=g-import-not-at-top
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  mixture = tuple(tuple(m) for m in config.data.mixture)
  data_filter = config.data.get("filter")
  if isinstance(data_filter, ml_collections.ConfigDict):
    data_filter = data_filter.to_dict()
  max_pairs = config.data.get("max_pairs", 0)
  if not mixture:
    _check_task(config.data.task, "data.task")
    if config.data.task.startswith(tasks.BACKTRANSLATED):
      filters.parse(data_filter, max_pairs)
    elif data_filter is not None or max_pairs:
      raise errors.ConfigError(
          "data.filter and data.max_pairs select back-translated pairs; "
          f"data.task={config.data.task!r} is not one. Use "
          "data.task=backtranslated:SCORED.jsonl, or unset them.")
  elif config.data.task or data_filter is not None or max_pairs:
    raise errors.ConfigError(
        f"data.mixture={mixture!r} names the pairs, and data.task, "
        "data.filter or data.max_pairs is set too: put data.task in "
        "data.mixture with its rate and set --config.data.task= (filter "
        "back-translated pairs by a config of their own).")
  for i, member in enumerate(mixture):
    if (len(member) != 2 or not isinstance(member[0], str)
        or not isinstance(member[1], (int, float)) or member[1] <= 0):
      raise errors.ConfigError(
          f"data.mixture[{i}]={member!r}: each member is (Task, rate) with "
          "a rate > 0, e.g. ((\"paraphrase_en_human\", 0.95), "
          "(\"paraphrase_en_ppdb_lexical\", 0.05)).")
    _check_task(member[0], f"data.mixture[{i}]")
  bitext_parts.unsplit(config, "cache_dir", "seqio's cache of a Task is "
                       "read whole")


def _members(config: ml_collections.ConfigDict
             ) -> tuple[tuple[str, float], ...]:
  """The (Task, rate) members `config.data` names (`check` passed them):
  those of data.mixture, or data.task alone (rate () below: read in passes
  over all its pairs)."""
  mixture = tuple(tuple(m) for m in config.data.mixture)
  if not mixture:
    return ((_task(config), 1.0),)
  return tuple((name, float(rate)) for name, rate in mixture)


def _check_not_empty(config: ml_collections.ConfigDict,
                     sizes: Sequence[int]) -> None:
  """DataError naming the Task (and its file) that gave no pairs, before
  the workdir gets any file."""
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  mixture = tuple(tuple(m) for m in config.data.mixture)
  named = [(f"data.mixture[{i}]", m[0]) for i, m in enumerate(mixture)] \
      if mixture else [("data.task", config.data.task)]
  for (key, name), size in zip(named, sizes):
    if size:
      continue
    if name.startswith(tasks.BACKTRANSLATED):
      path = name[len(tasks.BACKTRANSLATED):]
      filtered = config.data.filter is not None or config.data.max_pairs
      raise errors.DataError(
          f"{path}: no pairs to train on ({key}={name!r}"
          + (", through data.filter and data.max_pairs): no record passes "
             "them. Loosen data.filter." if filtered else
             "): the file holds no record of rank 0. Train on a `paraflax "
             "backtranslate` (or `paraflax score-paraphrases`) output that "
             "holds pairs."))
    raise errors.DataError(
        f"{key}={name!r}: the Task has no {config.data.split!r} pairs; "
        "check its files under PARAFLAX_DATA_DIR (`paraflax tasks` lists "
        "the Tasks), or choose another.")


def _pair_chunks(config: ml_collections.ConfigDict,
                 members: Sequence[tuple[str, float]], part: int | None = None
                 ) -> Iterator[tuple[str, list[tuple[str, str]]]]:
  """(member index, pairs) of every member in order, a chunk at a time:
  streamed from the files, or from seqio's cache (`data.cache_dir`, read
  whole: its shards hold the examples out of order); with `part`, only
  that part of data.parts of each member's pairs (`bitext_parts.reader`)."""
  from paraflax.data import bitext_parts  # pylint: disable=g-import-not-at-top
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  for i, (name, _) in enumerate(members):
    if part is not None:
      chunks = bitext_parts.reader([name], ("sentence1", "sentence2"), part,
                                   bitext_parts.count(config),
                                   config.data.split)()
      yield from ((str(i), chunk) for chunk in chunks)
      continue
    if config.data.cache_dir:
      examples = tasks.examples(name, config.data.split,
                                cache_dir=config.data.cache_dir)
      chunks = (examples[j:j + _CHUNK]
                for j in range(0, len(examples), _CHUNK))
    else:
      chunks = tasks.iter_examples(name, config.data.split, chunk=_CHUNK)
    for chunk in chunks:
      yield str(i), [(e["sentence1"], e["sentence2"]) for e in chunk]


def _cache_settings(config: ml_collections.ConfigDict,
                    members: Sequence[tuple[str, float]],
                    vocab: words.WordVocab) -> dict[str, Any]:
  """What the encoded pairs are made from: the cache is rebuilt when any
  of it changes (a file's size or time, the vocabulary, max_len...)."""
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  return {"members": [name for name, _ in members],
          "split": config.data.split,
          "cache_dir": config.data.cache_dir,
          "files": [encoded_cache.stamp_of(tasks.source_files(
              name, config.data.split)) for name, _ in members],
          "vocab": encoded_cache.digest(vocab.words),
          "max_len": config.data.max_len}


def vocab_and_stream(config: ml_collections.ConfigDict, workdir: str,
                     mesh: Mesh, vocab_file: str) -> tuple[words.WordVocab, Any]:
  """Streams the pairs of `config.data` (a seqio Task or Mixture, or Tasks
  mixed by rate) into a counted vocabulary (or reloads it from
  `vocab_file` in the workdir) and the workdir's encoded cache; returns
  the vocabulary and the megabatch stream the train loop reads."""
  from paraflax import files  # pylint: disable=g-import-not-at-top
  from paraflax.data import bitext_parts  # pylint: disable=g-import-not-at-top
  members = _members(config)
  parts = bitext_parts.count(config)
  vocab_path = os.path.join(workdir, vocab_file)
  # With parts, the vocabulary is counted on part 0, once for the
  # processes that share the workdir (the others wait, then load it).
  lock = encoded_cache.folder(workdir, "vocab") + ".lock"
  if parts > 1:
    os.makedirs(os.path.dirname(lock), exist_ok=True)
  with files.waiting_lock(lock) if parts > 1 else contextlib.nullcontext():
    vocab = _vocab(config, members, vocab_path, 0 if parts > 1 else None)
  if parts > 1:
    return vocab, _parted_stream(config, workdir, members, vocab, mesh)
  encoded, info = pairs_lib.cached_pairs(
      encoded_cache.folder(workdir, "pairs"),
      _cache_settings(config, members, vocab),
      lambda: _pair_chunks(config, members), vocab, config.data.max_len)
  sizes = [info["sizes"].get(str(i), 0) for i in range(len(members))]
  _check_not_empty(config, sizes)
  mixed = bool(config.data.mixture)
  stream = pairs_lib.MegabatchStream(
      encoded, batch=config.batch_size, megabatch=config.megabatch,
      shards=mesh.size, seed=config.seed, scramble=config.loss.scramble,
      sizes=tuple(sizes) if mixed else (),
      rates=tuple(rate for _, rate in members) if mixed else (),
      process=partitioning.process())
  return vocab, stream


def _vocab(config: ml_collections.ConfigDict,
           members: Sequence[tuple[str, float]], vocab_path: str,
           part: int | None) -> words.WordVocab:
  """The workdir's vocabulary, else one counted on the pairs (of `part`
  alone, then saved)."""
  if os.path.exists(vocab_path):  # resuming: the ids must not move
    return words.WordVocab.load(vocab_path)
  counted = collections.Counter()

  def texts() -> Iterator[str]:
    for member, chunk in _pair_chunks(config, members, part):
      counted[member] += len(chunk)
      yield from (s for p in chunk for s in p)

  vectors = config.model.word_vectors
  vocab = words.WordVocab.build(
      texts(), min_count=config.data.vocab_min_count,
      max_size=config.data.vocab_max_size or None,
      extra=words.vector_words(vectors)
      if vectors and config.data.get("vocab_from_vectors") else ())
  if part is None:
    _check_not_empty(config, [counted[str(i)] for i in range(len(members))])
  else:
    vocab.save(vocab_path)
  return vocab


def _parted_stream(config: ml_collections.ConfigDict, workdir: str,
                   members: Sequence[tuple[str, float]],
                   vocab: words.WordVocab, mesh: Mesh
                   ) -> pairs_lib.PartedMegabatches:
  """With data.parts > 1: this process's parts of the pairs, each encoded
  into its own cache folder (`pairs-part{p}of{S}`), as its block of each
  global megabatch (`pairs.PartedMegabatches`)."""
  from paraflax.data import bitext_parts  # pylint: disable=g-import-not-at-top
  parts = bitext_parts.count(config)
  mine = bitext_parts.owned(parts, partitioning.process())
  mixed, streams = bool(config.data.mixture), []
  for part in mine:
    encoded, info = pairs_lib.cached_pairs(
        encoded_cache.folder(workdir, f"pairs-part{part}of{parts}"),
        {**_cache_settings(config, members, vocab), "part": [part, parts]},
        lambda part=part: _pair_chunks(config, members, part), vocab,
        config.data.max_len, f"train part {part} of {parts}")
    sizes = [info["sizes"].get(str(i), 0) for i in range(len(members))]
    empty = [name for (name, _), n in zip(members, sizes) if not n]
    if empty:
      raise errors.DataError(
          f"data.parts={parts}: part {part} holds no pairs of {empty} (a "
          "Task of fewer pairs than parts, or of none). Set --config.data."
          "parts lower, or check the Task (`paraflax tasks`).")
    streams.append(pairs_lib.MegabatchStream(
        encoded, batch=config.batch_size // parts,
        megabatch=config.megabatch, seed=config.seed,
        scramble=config.loss.scramble, sizes=tuple(sizes) if mixed else (),
        rates=tuple(rate for _, rate in members) if mixed else (),
        part=part))
  return pairs_lib.PartedMegabatches(streams, config.batch_size,
                                     config.megabatch, mesh.size,
                                     partitioning.process())
