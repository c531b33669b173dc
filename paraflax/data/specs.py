"""Data named in a config: a spec string -> the corpus and split it names.

    bitext_multi30k_de_en[:SPLIT]     a catalogued corpus (`paraflax tasks`)
    tsv:GLOB[:COLUMNS]                tab-separated files, plain or gzip:
                                      source and English columns (0,1 by
                                      default), or one column of text
    lines:SRC_GLOB,EN_GLOB            line-aligned files (one GLOB: text)
    tfds:NAME/CONFIG[:SPLIT]          a prepared TFDS dataset (its
                                      data_dir: $TFDS_DATA_DIR or tfds's)

A GLOB matches local paths or any `tf.io.gfile` path (`gs://b/bitext/*.gz`),
its files read in sorted order. A user's spec becomes a catalogue entry of
the same kind as the bundled ones (`corpora.Corpus`), and a seqio Task of
the same kind (`tasks.examples`): one reading path for both. When a spec
is parsed its files are listed and the first line of each `lines:` file
read: a pattern that matches none, a column or file on both sides of a
pair, files of a `lines:` glob whose names do not pair, or a TSV given as
a `lines:` side stops here, before any work.
"""
from __future__ import annotations

import dataclasses
import glob
import hashlib
import logging
import os
import re
from collections.abc import Iterable, Iterator, Sequence

from paraflax import errors
from paraflax.data import corpora
from paraflax.data import tfds_parts

TSV, LINES, TFDS = "tsv:", "lines:", "tfds:"
PREFIXES = (TSV, LINES, TFDS)
_COLUMNS = re.compile(r"^(?P<glob>.+):(?P<columns>\d+(,\d+)*)$")
# Every form a data spec takes, with what it names: `paraflax tasks` lists
# them (docs/your-data.md has the same table).
FORMS = (
    ("NAME[:SPLIT]", "a catalogued corpus (listed above)"),
    ("tsv:GLOB[:COLUMNS]", "tab-separated files, plain or gzip: source and "
     "English columns (0,1 by default)"),
    ("lines:SRC_GLOB,EN_GLOB", "line-aligned files, paired in sorted name "
     "order"),
    ("tfds:NAME/CONFIG[:SPLIT]", "a TFDS dataset prepared offline"),
    ("backtranslated:FILE.jsonl", "English pairs (reference, 1-best) of "
     "`paraflax backtranslate` or `score-paraphrases` records"),
    ("selected:FOLDER:BIN", "a bin of a `paraflax select-domain` folder "
     "(--select-dir lists them)"),
)
_HINT = ("A data spec is a catalogued name (`paraflax tasks`), "
         "tsv:GLOB[:COLUMNS], lines:SRC_GLOB,EN_GLOB or tfds:NAME/CONFIG"
         "[:SPLIT] (docs/your-data.md).")


@dataclasses.dataclass(frozen=True)
class Data:
  """What a spec names: a corpus and one of its splits."""
  spec: str  # as written
  corpus: corpora.Corpus
  split: str


def is_spec(name: str) -> bool:
  """A user's data (files or TFDS), not a catalogued or registered name."""
  return name.startswith(PREFIXES)


def is_url(path: str) -> bool:
  return "://" in path


def expand(pattern: str, spec: str) -> tuple[str, ...]:
  """The files `pattern` matches, sorted; none is an error naming `spec`."""
  if is_url(pattern):
    from paraflax import quiet  # pylint: disable=g-import-not-at-top
    found = quiet.tensorflow().io.gfile.glob(pattern)
  else:
    pattern = os.path.expanduser(pattern)
    found = [os.path.abspath(p) for p in glob.glob(pattern)
             if not os.path.isdir(p)]
  if not found:
    raise errors.DataError(
        f"{spec}: {pattern} matches no file. Check the path (relative paths "
        f"start at {os.getcwd()}). {_HINT}")
  return tuple(sorted(found))


def _name(kind: str, files: tuple[str, ...], features: tuple[str, ...]
          ) -> str:
  """A Task name that depends on the files and the features read."""
  key = "\n".join((*files, *features))
  return f"{kind}_{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def _tsv(body: str, spec: str, features: tuple[str, ...]) -> corpora.Corpus:
  found = _COLUMNS.match(body)
  pattern = found["glob"] if found else body
  if found:
    columns = tuple(int(c) for c in found["columns"].split(","))
    if len(columns) != len(features):
      raise errors.ConfigError(
          f"{spec}: {len(columns)} column(s) named, but this data needs "
          f"{len(features)} ({', '.join(features)}). {_HINT}")
    fields, extra = max(columns) + 1, True
    if len(set(columns)) < len(columns):
      raise errors.ConfigError(
          f"{spec}: column {columns[0] if len(columns) == 2 else columns} "
          "named for two features: each sentence would be paired with "
          "itself. Name the source column, then the English one, e.g. "
          f"tsv:{pattern}:0,1.")
  else:  # every column is used: a row with more is a mistake
    columns, fields, extra = tuple(range(len(features))), len(features), False
  found = expand(pattern, spec)
  parts = tuple(corpora.Tsv(f, fields, columns, allow_extra=extra)
                for f in found)
  return corpora.Corpus(_name("tsv", (*found, str(columns)), features),
                        features,
                        {"train": corpora.Split(parts)})


def _lines(body: str, spec: str, features: tuple[str, ...]) -> corpora.Corpus:
  patterns = body.split(",")
  if len(patterns) != len(features):
    raise errors.ConfigError(
        f"{spec}: {len(patterns)} file pattern(s), but this data needs "
        f"{len(features)} ({', '.join(features)}), comma-separated. {_HINT}")
  sides = [expand(p, spec) for p in patterns]
  if len({len(s) for s in sides}) > 1:
    raise errors.DataError(
        f"{spec}: the patterns match {' and '.join(map(str, map(len, sides)))}"
        " files; each side needs one file per file of the other, paired by "
        "the part of their names the wildcards match.")
  rows = _paired(patterns, sides, spec)
  for files in rows:
    _check_row(files, spec)
  parts = tuple(corpora.Lines(files) for files in rows)
  return corpora.Corpus(_name("lines", sum(sides, ()), features), features,
                        {"train": corpora.Split(parts)})


def _wildcards(pattern: str) -> re.Pattern:
  """`pattern` (a glob) as a regular expression that captures what each
  wildcard matched."""
  out, i = [], 0
  while i < len(pattern):
    c = pattern[i]
    end = pattern.find("]", i + 2) if c == "[" else -1
    if c == "*":
      out.append("(.*)")
    elif c == "?":
      out.append("(.)")
    elif end > 0:
      body = pattern[i + 1:end]
      out.append("([" + ("^" + body[1:] if body[0] == "!" else body) + "])")
      i = end
    else:
      out.append(re.escape(c))
    i += 1
  return re.compile("".join(out) + "$")


def _where_pattern(pattern: str) -> str:
  """`pattern` as `expand` matches it: absolute, for a local path."""
  return pattern if is_url(pattern) else os.path.abspath(
      os.path.expanduser(pattern))


def _name_tokens(regex: re.Pattern, path: str) -> tuple[str, ...]:
  """The words (split at . _ - /) of what the wildcards matched in `path`."""
  found = regex.match(path)
  text = "/".join(found.groups()) if found else path
  return tuple(t for t in re.split(r"[._/-]", text) if t)


def _paired(patterns: Sequence[str], sides: Sequence[tuple[str, ...]],
            spec: str) -> list[tuple[str, ...]]:
  """The files of each side paired by the part of their names the
  wildcards match (n2020 in n2020.de and n2020.en of `*.de,*.en`), less
  the words every name of one side holds and the other's do not (fi and
  en in part-1.fi.gz and part-1.en.gz of `fi/*,en/*`): sorted order alone
  would pair n2020.de with n2021.en when one year is missing on a side.
  One file a side is one pair, whatever the names."""
  if len(sides[0]) == 1:
    return [tuple(s[0] for s in sides)]
  tokens = [{path: _name_tokens(_wildcards(_where_pattern(pattern)), path)
             for path in files} for pattern, files in zip(patterns, sides)]
  every = [set.intersection(*map(set, side.values())) for side in tokens]
  own = (every[0] - every[1], every[1] - every[0])
  keyed = [{tuple(t for t in words if t not in own[i]): path
            for path, words in side.items()} for i, side in enumerate(tokens)]
  for keys, pattern in zip(keyed, patterns):
    if len(keys) < len(sides[0]):
      raise errors.DataError(
          f"{spec}: two files of {pattern} have one name once the words "
          "all its files share are left out; give the pairs as "
          "lines:A.de,A.en specs, one per pair.")
  for keys, other, pattern in ((keyed[0], keyed[1], patterns[0]),
                               (keyed[1], keyed[0], patterns[1])):
    alone = sorted(keys[k] for k in keys.keys() - other.keys())
    if alone:
      raise errors.DataError(
          f"{spec}: {alone[0]} (of {pattern}) has no file of the same name "
          "on the other side; the files of the two patterns are paired by "
          "the part of their names the wildcards match (n2020 in n2020.de "
          "and n2020.en). Rename the files, or give the pairs as "
          "lines:A.de,A.en specs, one per pair.")
  order = {path: i for i, path in enumerate(sides[0])}  # read sorted
  return sorted((tuple(keys[k] for keys in keyed) for k in keyed[0]),
                key=lambda files: order[files[0]])


def _check_row(files: tuple[str, ...], spec: str) -> None:
  """One file on both sides pairs each sentence with itself; a file with
  columns (a tab on its first line) is a TSV, not one side's sentences."""
  if len(files) > 1 and len({_real(f) for f in files}) < len(files):
    raise errors.ConfigError(
        f"{spec}: {files[0]} is on both sides: each sentence would be paired "
        "with itself. Name the source file, then the English one.")
  from paraflax.data import readers  # pylint: disable=g-import-not-at-top
  for path in files:
    if not is_url(path):
      first = next(readers.iter_lines(path), "")
      if "\t" in first:
        raise errors.DataError(
            f"{spec}: {path}:1 holds a tab, so it is a tab-separated file, "
            "not one side's sentences: give it as "
            f"tsv:{path}[:COLUMNS] (docs/your-data.md), or replace the "
            "tabs with spaces.")


def _real(path: str) -> str:
  return path if is_url(path) else os.path.realpath(path)


def _tfds(body: str, spec: str, features: tuple[str, ...]
          ) -> tuple[corpora.Corpus, str]:
  name, _, split = body.partition(":")
  if "/" not in name or not name.split("/")[1]:
    raise errors.ConfigError(f"{spec}: name the dataset and its config, "
                             f"e.g. tfds:wmt19_translate/ru-en. {_HINT}")
  split = split or "train"
  part = tfds_parts.Tfds(name, split)
  return corpora.Corpus(_name("tfds", (name, split), features), features,
                        {split: corpora.Split((part,))}), split


def parse(spec: str, features: tuple[str, ...] = corpora.BITEXT,
          split: str = "train") -> Data:
  """The corpus and split `spec` names; `split` is the default split of a
  catalogued name without one. Files are listed, not read."""
  spec = spec.strip()
  if not spec:
    raise errors.ConfigError(f"an empty data spec. {_HINT}")
  if spec.startswith(TSV):
    return Data(spec, _tsv(spec[len(TSV):], spec, features), "train")
  if spec.startswith(LINES):
    return Data(spec, _lines(spec[len(LINES):], spec, features), "train")
  if spec.startswith(TFDS):
    corpus, split = _tfds(spec[len(TFDS):], spec, features)
    return Data(spec, corpus, split)
  name, _, named_split = spec.partition(":")
  if name not in corpora.CORPORA:
    raise errors.ConfigError(f"{spec}: not a catalogued corpus. {_HINT}")
  corpus = corpora.CORPORA[name]
  split = named_split or split
  if split not in corpus.splits:
    raise errors.ConfigError(f"{spec}: {name} has no split {split!r}; it "
                             f"has {', '.join(corpus.splits)}.")
  return Data(spec, corpus, split)


def read(spec: str, features: tuple[str, ...] = corpora.BITEXT,
         split: str = "train") -> dict[str, list]:
  """The rows `spec` names as columns: {feature: [value per row]}."""
  data = parse(spec, features, split)
  return corpora.read(data.corpus, data.split)


def named_columns(spec: str) -> bool:
  """Whether a tsv: spec names its columns (tsv:GLOB:COLUMNS)."""
  return spec.startswith(TSV) and bool(_COLUMNS.match(spec[len(TSV):]))


def parse_bitext(spec: str, what: str, split: str = "train") -> Data:
  """`parse`, refusing a monolingual corpus with a message: `what` (a flag,
  a key) names where the spec was given."""
  data = parse(spec, corpora.BITEXT, split)
  if tuple(data.corpus.features) != corpora.BITEXT:
    raise errors.ConfigError(
        f"{what} {spec}: {data.corpus.name} holds "
        f"{', '.join(data.corpus.features)}, not bitext (source, target): "
        "name a bitext corpus (`paraflax tasks` lists them with their "
        f"features) or your own pairs. {_HINT}")
  return data


def row_files(spec: str) -> list[str]:
  """The files whose rows the split `spec` names holds. A set that a split
  holds out is kept apart from it already (the split drops the rows it
  shares with it), so it is not among them."""
  data = parse(spec)
  return list(dict.fromkeys(corpora.files(data.corpus, data.split,
                                          held_out=False)))


def refuse_shared_files(named: Sequence[tuple[str, str]],
                        fix: str) -> None:
  """Stops when two of `named` ((key, spec) pairs, "" for none) read a
  file in common: a test set drawn from the training data, or a dev set
  that is the test set, scores a model on what it was trained or tuned
  on. `fix` says which key to change, with what."""
  seen: dict[str, tuple[str, str]] = {}
  for key, spec in named:
    if not spec:
      continue
    found = row_files(spec)
    for path in found:
      if path in seen and seen[path][0] != key:
        other, other_spec = seen[path]
        raise errors.ConfigError(
            f"{key}={spec} and {other}={other_spec} both read {path}: the "
            f"split {key} names would not be kept apart from {other}. {fix}")
    for path in found:
      seen.setdefault(path, (key, spec))


def pairs(spec: str, split: str = "train") -> list[tuple[str, str]]:
  """(source, English) pairs of a bitext spec."""
  columns = read(spec, corpora.BITEXT, split)
  return list(zip(columns["source"], columns["target"]))


def train_specs(data) -> tuple[str, ...]:
  """`data.train` (one spec, or several), checked to name something."""
  train = (data.train,) if isinstance(data.train, str) else tuple(data.train)
  if not train:
    raise errors.ConfigError(
        "data.train names no bitext: give one spec or several, e.g. "
        "--config.data.train=tsv:ru-en.tsv or "
        "--config.data.train=\"('tsv:a.tsv', 'lines:b.ru,b.en')\". " + _HINT)
  for spec in train:
    parse(spec)
  return train


class DevOverlap:
  """Dev pairs found in the training pairs stop the run (dev figures and
  the best checkpoint would be chosen on training data), unless
  `allowed`; dev English sentences found on the training side are
  counted in a warning (a shared English side: WMT's test sets). `watch`
  passes chunks of training pairs through and checks when they end, on
  the first stream that ends: memory holds the dev pairs, not the
  training ones."""

  def __init__(self, dev: Sequence[tuple[str, str]], dev_spec: str,
               allowed: bool):
    self.dev, self.dev_spec, self.allowed = list(dev), dev_spec, allowed
    self.checked = not self.dev

  def watch(self, chunks: Iterable[Sequence[tuple[str, str]]]
            ) -> Iterator[Sequence[tuple[str, str]]]:
    pairs, english = set(self.dev), {t for _, t in self.dev}
    found, found_english = set(), set()
    for chunk in chunks:
      if not self.checked:
        found.update(p for p in chunk if p in pairs)
        found_english.update(t for _, t in chunk if t in english)
      yield chunk
    if not self.checked:
      self.checked = True
      self._report(sum(p in found for p in self.dev),
                   sum(t in found_english for _, t in self.dev))

  def _report(self, same: int, shared: int) -> None:
    if same and not self.allowed:
      raise errors.DataError(
          f"data.dev={self.dev_spec}: {same} of its {len(self.dev)} pairs "
          "are in data.train too; dev BLEU and the best checkpoint would be "
          "chosen on training data. Remove them from the training files, "
          "name another dev set, or set "
          "--config.data.allow_dev_overlap=true.")
    if same or shared:
      logging.warning("data.dev=%s: %d of its %d pairs and %d of its "
                      "English sentences are in data.train too",
                      self.dev_spec, same, len(self.dev), shared)
