"""seqio Tasks and Mixtures over the shared corpora (`corpora.CORPORA`).

Each Task reads its files through `paraflax.data.readers` when a dataset is
requested, so `PARAFLAX_DATA_DIR` set after `register()` is honoured. Features
are raw strings (and a float32 `score` for STS): tokenization is left to the
training code.
"""
from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
from collections.abc import Callable, Iterator

import numpy as np

from paraflax import errors
from paraflax import files
from paraflax import quiet
from paraflax.data import backtranslated
from paraflax.data import corpora
from paraflax.data import filters
from paraflax.data import readers
from paraflax.data import specs

tf = quiet.tensorflow()
# seqio loads TensorFlow: only after the quiet load above.
import seqio  # pylint: disable=g-import-not-at-top,wrong-import-position

_BATCH = 4096


def _feature(dtype: tf.DType) -> seqio.Feature:
  # Rank-0 pass-through: get_dataset validates dtype and rank but changes
  # nothing, and Mixtures keep the features because they are declared.
  return seqio.Feature(seqio.PassThroughVocabulary(size=0), add_eos=False,
                       dtype=dtype, rank=0)


def _dtype(feature: str) -> tf.DType:
  return tf.float32 if feature == "score" else tf.string


def _output_features(corpus: corpora.Corpus) -> dict[str, seqio.Feature]:
  return {f: _feature(_dtype(f)) for f in corpus.features}


def _columns(rows: Iterator[tuple], features: tuple[str, ...]
             ) -> Iterator[dict[str, np.ndarray]]:
  """`rows` as columns, `_BATCH` rows at a time."""
  while chunk := list(itertools.islice(rows, _BATCH)):
    yield {f: np.array(c, _dtype(f).as_numpy_dtype)
           for f, c in zip(features, zip(*chunk))}


def _streamed(rows: Callable[[], Iterator[tuple]], features: tuple[str, ...]
              ) -> tf.data.Dataset:
  """A dataset of `rows()`, read as it is iterated: memory flat in their
  number; a DataError they raise surfaces as itself (`_task_chunks`)."""
  signature = {f: tf.TensorSpec([None], _dtype(f)) for f in features}
  return tf.data.Dataset.from_generator(
      lambda: backtranslated.kept_errors(_columns(rows(), features)),
      output_signature=signature).unbatch()


def _dataset_fn(corpus: corpora.Corpus, split: str, shuffle_files: bool
                ) -> tf.data.Dataset:
  """The split read from its files as the dataset is iterated, in file
  order."""
  del shuffle_files  # each split is one stream, in file order
  return _streamed(lambda: corpora.iter_rows(corpus, split), corpus.features)


def _train_size(task: seqio.Task) -> float:
  """Mixing rate: the number of training examples, counted when mixing."""
  corpus = corpora.get(task.name)
  return float(sum(1 for _ in corpora.iter_rows(corpus, "train")))


def register_corpus(corpus: corpora.Corpus) -> str:
  """The seqio Task of a catalogue entry (bundled, or a user's data spec);
  its name."""
  if corpus.name not in seqio.TaskRegistry.names():
    seqio.TaskRegistry.add(
        corpus.name,
        source=seqio.FunctionDataSource(
            functools.partial(_dataset_fn, corpus),
            splits=tuple(corpus.splits)),
        output_features=_output_features(corpus))
  return corpus.name


def register() -> None:
  """Registers every catalogued Task and Mixture; already present names are
  left alone, so calling this twice (or after an import that did) is safe."""
  for corpus in corpora.CORPORA.values():
    register_corpus(corpus)
  for name, members in corpora.MIXTURES.items():
    if name not in seqio.MixtureRegistry.names():
      seqio.MixtureRegistry.add(name, [(m, _train_size) for m in members])


BACKTRANSLATED = backtranslated.PREFIX


score_of = backtranslated.score_of  # beam-score's filter reads it here


# A backtranslated Task's examples carry their place in the Task's order:
# seqio's cache (`paraflax cache-task`) shuffles them across its shards, and
# `examples` puts them back, so a cached Task trains on what the uncached does.
POSITION = "position"


def _numbered(ds: tf.data.Dataset) -> tf.data.Dataset:
  return ds.enumerate().map(lambda i, ex: {**ex, POSITION: i})


# What each registered backtranslated Task reads: (path, filter, max_pairs,
# seed), so that `iter_examples` streams it from its files.
_BACKTRANSLATED_SOURCES: dict[str, tuple] = {}


def source_files(name: str, split: str = "train",
                 features: tuple[str, ...] = corpora.BITEXT) -> list[str]:
  """The files a Task (or Mixture, or data spec) reads: what a cache of
  its examples is checked against."""
  if specs.is_spec(name) and not name.startswith(BACKTRANSLATED):
    data = specs.parse(name, features, split)
    return corpora.files(data.corpus, data.split)
  name, split = resolve(name, split, features)
  if name in _BACKTRANSLATED_SOURCES:
    from paraflax.data import shards  # pylint: disable=g-import-not-at-top
    return shards.resolve(_BACKTRANSLATED_SOURCES[name][0])
  if name in seqio.MixtureRegistry.names():
    return [f for m in seqio.MixtureRegistry.get(name).rate_per_task_name
            for f in source_files(m, split)]
  if name in corpora.CORPORA:
    return corpora.files(corpora.get(name), split)
  return [name]


def iter_examples(name: str, split: str, features: tuple[str, ...]
                  = corpora.BITEXT, chunk: int = _BATCH
                  ) -> Iterator[list[dict[str, str | float]]]:
  """`examples` (without `cache_dir`) as lists of at most `chunk`, read
  as a stream: a backtranslated Task from its files, any other Task
  through its seqio dataset in batches, a Mixture member after member."""
  name, split = resolve(name, split, features)
  if name in _BACKTRANSLATED_SOURCES:
    yield from backtranslated.stream(*_BACKTRANSLATED_SOURCES[name], chunk)
    return
  if name in seqio.MixtureRegistry.names():
    for m in seqio.MixtureRegistry.get(name).rate_per_task_name:
      yield from iter_examples(m, split, chunk=chunk)
    return
  if name not in seqio.TaskRegistry.names():
    raise errors.ConfigError(f"unknown Task or Mixture {name!r}; `paraflax "
                             "tasks` lists them.")
  yield from _task_chunks(seqio.TaskRegistry.get(name), split, chunk)


def iter_task(name: str, split: str, chunk: int = _BATCH
              ) -> Iterator[list[dict[str, str | float]]]:
  """The examples of a Task's seqio dataset (through its preprocessors: a
  backtranslated Task's data.filter and data.max_pairs), `chunk` at a
  time, as the dataset streams them: what seqio's readers of the Task
  get, in `examples`' order."""
  name, split = resolve(name, split)
  if name not in seqio.TaskRegistry.names():
    raise errors.ConfigError(f"unknown Task {name!r}; `paraflax tasks` "
                             "lists them.")
  for part in _task_chunks(seqio.TaskRegistry.get(name), split, chunk):
    for ex in part:
      ex.pop(POSITION, None)  # in order: no cache shuffled them
    yield part


def _task_chunks(task: seqio.Task, split: str, chunk: int,
                 use_cached: bool = False
                 ) -> Iterator[list[dict[str, str | float]]]:
  """The examples of `task`'s seqio dataset, `chunk` at a time, as the
  dataset streams them; a DataError of its files raised as itself."""
  with backtranslated.data_errors():
    ds = task.get_dataset(sequence_length=None, split=split, shuffle=False,
                          use_cached=use_cached)
    # Batched: pulling single elements out of tf.data costs ~0.2 ms each.
    for batch in ds.batch(chunk).as_numpy_iterator():
      yield [dict(zip(batch, map(_to_python, row)))
             for row in zip(*batch.values())]


def register_backtranslated(path: str, data_filter: dict | None = None,
                            max_pairs: int = 0, seed: int = 0) -> str:
  """A Task of (English reference, 1-best translation) pairs from a
  `paraflax backtranslate` JSONL, or from a scored one through
  `data.filter` and `data.max_pairs` (`data/filters.py`); returns its
  registered name, which differs with any of the four."""
  spec = filters.parse(data_filter, max_pairs)
  path = os.path.abspath(path)
  # A config names it, not a flag: the command line's check did not see it.
  files.refuse_unfinished_inputs([("data.task", path)])
  name = backtranslated.task_name(path, spec, max_pairs, seed)
  _BACKTRANSLATED_SOURCES[name] = (path, spec, max_pairs, seed)
  if name not in seqio.TaskRegistry.names():
    score = spec.score if spec is not None and spec.bounded else None
    seqio.TaskRegistry.add(
        name, source=seqio.FunctionDataSource(
            functools.partial(backtranslated.dataset, path, score),
            splits=("train",)),
        # Everything up to the placeholder is what `paraflax cache-task`
        # stores (seqio's Beam caching).
        preprocessors=[*filters.preprocessors(spec, max_pairs, seed, path),
                       _numbered, seqio.CacheDatasetPlaceholder()],
        output_features={f: _feature(tf.string) for f in corpora.PARAPHRASE})
  return name


SELECTED = "selected:"


def _selected_fn(files: tuple[str, str], split: str, shuffle_files: bool
                 ) -> tf.data.Dataset:
  del split, shuffle_files
  return _streamed(lambda: readers.iter_parallel(files, empty="error"),
                   corpora.BITEXT)


def register_selected(spec: str) -> str:
  """The bitext Task of one bin of a `paraflax select-domain` folder,
  `spec` = FOLDER:BIN (the Task name `selected:FOLDER:BIN` of its
  summary); returns its registered name."""
  folder, _, number = spec.rpartition(":")
  bins = corpora.selected_bins(folder)
  if number not in bins:
    raise errors.ConfigError(
        f"{SELECTED}{spec}: {folder} has bins {', '.join(bins) or 'none'}; "
        f"name one as {SELECTED}{folder}:<bin>.")
  folder = os.path.abspath(folder)
  name = ("bitext_selected_" + hashlib.sha256(folder.encode()).hexdigest()[:12]
          + f"_bin{number}")
  if name not in seqio.TaskRegistry.names():
    seqio.TaskRegistry.add(
        name, source=seqio.FunctionDataSource(
            functools.partial(_selected_fn, bins[number]), splits=("train",)),
        output_features={f: _feature(tf.string) for f in corpora.BITEXT})
  return name


def _to_python(value: np.generic | bytes) -> str | float:
  return value.decode("utf-8") if isinstance(value, bytes) else float(value)


def _cached(task: seqio.Task, cache_dir: str) -> None:
  """Stops unless `cache_dir` holds seqio's cache of `task`."""
  seqio.add_global_cache_dirs([cache_dir])
  if not task.cache_dir:
    raise errors.ConfigError(
        f"data.cache_dir={cache_dir}: it holds no cache of Task {task.name}. "
        "Cache it first with paraflax cache-task --output "
        f"{cache_dir} and the same data.task, data.filter, data.max_pairs "
        "and seed, or unset data.cache_dir.")


def resolve(name: str, split: str,
            features: tuple[str, ...] = corpora.BITEXT) -> tuple[str, str]:
  """The registered Task (or Mixture) name and split of what a config
  names: a catalogued Task (`NAME` or `NAME:SPLIT`), a user's data spec
  (`specs`: tsv:, lines:, tfds:, read as `features`), backtranslated:FILE
  or selected:FOLDER:BIN."""
  register()
  if name.startswith(BACKTRANSLATED):
    return register_backtranslated(name[len(BACKTRANSLATED):]), split
  if name.startswith(SELECTED):
    return register_selected(name[len(SELECTED):]), split
  if specs.is_spec(name) or ":" in name:
    data = specs.parse(name, features, split)
    return register_corpus(data.corpus), data.split
  return name, split


def examples(name: str, split: str, cache_dir: str | None = None,
             features: tuple[str, ...] = corpora.BITEXT
             ) -> list[dict[str, str | float]]:
  """All examples of a Task in file order, or of a Mixture as its members'
  examples concatenated in the Mixture's order (no sampling: a paraphrase
  config's `data.mixture` samples Tasks by rate, `pairs.Rates`); from
  seqio's cache in `cache_dir` (`paraflax cache-task`) when given. `name`
  is anything `resolve` takes; `features` are a user's data spec's."""
  name, split = resolve(name, split, features)
  if name in seqio.MixtureRegistry.names():
    members = seqio.MixtureRegistry.get(name).rate_per_task_name
    return [ex for m in members for ex in examples(m, split, cache_dir)]
  if name not in seqio.TaskRegistry.names():
    raise errors.ConfigError(f"unknown Task or Mixture {name!r}; `paraflax "
                             "tasks` lists them.")
  task = seqio.TaskRegistry.get(name)
  if cache_dir:
    _cached(task, cache_dir)
  out = [ex for chunk in _task_chunks(task, split, _BATCH, bool(cache_dir))
         for ex in chunk]
  if out and POSITION in out[0]:
    out.sort(key=lambda ex: ex[POSITION])
    for ex in out:
      del ex[POSITION]
  return out


def export_pairs(task: str, output: str, overwrite: bool = False) -> int:
  """Writes the train pairs of a catalogued paraphrase Task or Mixture (the
  human English pairs) as `paraflax backtranslate` records, so that they
  take the one path of the back-translated pairs: score-paraphrases, then
  `data.task=backtranslated:SCORED` with `data.filter`. sentence1 is the
  reference, sentence2 the translation (what `length` and the LM score);
  `cost` is null: no NMT produced them. Returns the records written.
  The records are streamed to the file; an output that holds them already
  (a rerun) is left as it is, one that holds others is refused unless
  `overwrite`."""
  files.check_output(output)
  register()
  if corpora.PARAPHRASE != _features(task):
    raise errors.ConfigError(
        f"{task!r} is not a paraphrase Task ({', '.join(corpora.PARAPHRASE)})"
        "; `paraflax tasks` lists them (paraphrase_en_*).")

  def lines() -> Iterator[bytes]:
    examples = (ex for chunk in iter_examples(task, "train") for ex in chunk)
    for i, ex in enumerate(examples):
      yield (json.dumps({"id": i, "reference": ex["sentence1"],
                         "translation": ex["sentence2"], "rank": 0,
                         "cost": None}, ensure_ascii=False) + "\n").encode()

  if os.path.isfile(output) and not overwrite:
    with open(output, "rb") as f:
      held = all(a == b for a, b in itertools.zip_longest(f, lines()))
    if not held:
      raise errors.ConfigError(
          f"{output} exists and holds another result; write to a new "
          "output, or pass --overwrite to replace it.")
    with open(output, "rb") as f:
      return sum(1 for _ in f)
  with files.atomic_output(output) as f:
    return sum(f.write(line) > 0 for line in lines())


def _features(name: str) -> tuple[str, ...]:
  """The features of a catalogued Task or Mixture; () for another name."""
  if name in corpora.MIXTURES:
    return _features(corpora.MIXTURES[name][0])
  return tuple(corpora.CORPORA[name].features) if name in corpora.CORPORA \
      else ()
