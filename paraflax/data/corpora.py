"""Catalogue of the shared corpora: which files form which corpus and split.

The catalogue is plain data. Paths are relative to the data directory and are
resolved only when a split is read (`read`), so `PARAFLAX_DATA_DIR` set after
import is honoured. Every file is read through `paraflax.data.readers`.

`mono_en_domains/abc_science.txt.gz` is deliberately left out: it holds invalid
UTF-8 (line 613 has byte 0xb0, a Latin-1 degree sign) and CRLF line ends, so the
readers reject it. Re-encode it as UTF-8 before adding it here.
"""
from __future__ import annotations

import dataclasses
import html
import json
import logging
import os
import pathlib
from collections.abc import Iterator, Mapping
from typing import Protocol

from paraflax import errors
from paraflax.data import paths
from paraflax.data import readers
from paraflax.data import sts

PARAPHRASE = ("sentence1", "sentence2")
BITEXT = ("source", "target")  # non-English side, English side
MONO = ("text",)
STS = ("sentence1", "sentence2", "score")

# Three-letter codes of the WMT-derived folders.
_ISO3 = {"de": "deu", "fr": "fra", "cs": "ces", "en": "eng"}


@dataclasses.dataclass(frozen=True)
class Lines:
  """Line-aligned text files; line i of `files[k]` is feature k of row i."""
  files: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Tsv:
  """One tab-separated file; feature k of a row is column `columns[k]`.
  Rows have exactly `fields` columns, or at least that many with
  `allow_extra`."""
  file: str
  fields: int
  columns: tuple[int, ...]
  allow_extra: bool = False


@dataclasses.dataclass(frozen=True)
class StsSet:
  """A set loaded by `paraflax.data.sts.load` (pairs and float scores)."""
  name: str


class ReadsItself(Protocol):
  """A part that reads its own rows (`tfds_parts.Tfds`)."""

  def rows(self) -> list[tuple]:
    ...


Part = Lines | Tsv | StsSet | ReadsItself


@dataclasses.dataclass(frozen=True)
class Split:
  parts: tuple[Part, ...]  # concatenated in this order
  empty: readers.EmptyPolicy = "error"
  dedup: bool = False  # drop repeated rows, keeping the first occurrence
  # Moses' escapes (&apos; &quot; &amp; &#91; ...) back to the characters,
  # which the other corpora hold as they are; escaped, the word tokenizer
  # splits them into "&", "apos", ";".
  unescape: bool = False
  # Sets kept apart from this split (dev and test sets): a row equal to one
  # of theirs is dropped, and the log counts it.
  held_out: tuple[Part, ...] = ()


@dataclasses.dataclass(frozen=True)
class Corpus:
  name: str  # also the seqio Task name
  features: tuple[str, ...]
  splits: Mapping[str, Split]
  # ("de", "en") for bitext, else None.
  pair: tuple[str, str] | None = None


# No key or flag drops the empty rows of a data spec: the fix is the file's.
_EMPTY_FIX = "Remove those rows from every side: every line is one row."


def _where(root: pathlib.Path, file: str) -> str | pathlib.Path:
  """A catalogued file is relative to the data folder; a user's file
  (`specs`) is absolute or a gfile URL."""
  return file if "://" in file or os.path.isabs(file) else root / file


def _read_part(part: Part, root: pathlib.Path, empty: readers.EmptyPolicy
               ) -> list[tuple]:
  if isinstance(part, StsSet):
    s = sts.load(part.name, root / "sts")
    return list(zip(s.sentence1, s.sentence2, s.scores.tolist()))
  if isinstance(part, Tsv):
    rows, _ = readers.read_tsv(_where(root, part.file), fields=part.fields,
                               allow_extra=part.allow_extra, empty=empty)
    return [tuple(r[c] for c in part.columns) for r in rows]
  if not isinstance(part, Lines):
    return part.rows()
  if len(part.files) == 1:  # read_lines names the empty lines more plainly
    lines, _ = readers.read_lines(_where(root, part.files[0]), empty=empty,
                                  fix=_EMPTY_FIX)
    return [(l,) for l in lines]
  rows, _ = readers.read_parallel([_where(root, f) for f in part.files],
                                  empty=empty, fix=_EMPTY_FIX)
  return rows


def _split(corpus: Corpus, split: str) -> Split:
  if split not in corpus.splits:
    raise errors.DataError(
        f"{corpus.name} has no split {split!r}; it has "
        f"{', '.join(corpus.splits)}.")
  return corpus.splits[split]


def _iter_part(part: Part, root: pathlib.Path, empty: readers.EmptyPolicy
               ) -> Iterator[tuple]:
  """`_read_part`'s rows one at a time; files are streamed, a TFDS
  split or an STS set read whole."""
  if isinstance(part, Tsv):
    for row in readers.iter_tsv(_where(root, part.file), fields=part.fields,
                                allow_extra=part.allow_extra, empty=empty):
      yield tuple(row[c] for c in part.columns)
  elif isinstance(part, Lines):
    yield from readers.iter_parallel([_where(root, f) for f in part.files],
                                     empty=empty, fix=_EMPTY_FIX)
  else:
    yield from _read_part(part, root, empty)


class _HeldOut:
  """The rows of a split's held-out sets: `keep` drops a row equal to one
  of theirs, `report` logs how many it dropped."""

  def __init__(self, corpus: Corpus, split: str, root: pathlib.Path):
    self.where = f"{corpus.name}/{split}"
    self.held_out = _split(corpus, split).held_out
    self.rows = {r for p in self.held_out for r in _read_part(p, root, "error")}
    self.dropped = 0

  def keep(self, row: tuple) -> bool:
    if row in self.rows:
      self.dropped += 1
      return False
    return True

  def report(self) -> None:
    if self.dropped:
      logging.warning("%s: dropped %d row(s) that a held-out dev or test "
                      "set holds (%s)", self.where, self.dropped, ", ".join(
                          f for p in self.held_out for f in _names(p)))


def iter_rows(corpus: Corpus, split: str, root: pathlib.Path | None = None
              ) -> Iterator[tuple]:
  """`read`'s rows, in its order, one at a time: memory flat in the
  corpus size where the split's parts are files, except a split that
  drops repeats (`dedup`), which is read whole to find them."""
  spec = _split(corpus, split)
  if spec.dedup:
    yield from zip(*read(corpus, split, root).values())
    return
  root = root or paths.data_dir()
  held = _HeldOut(corpus, split, root)
  for part in spec.parts:
    for row in _iter_part(part, root, spec.empty):
      row = tuple(html.unescape(v) for v in row) if spec.unescape else row
      if held.keep(row):
        yield row
  held.report()


def read(corpus: Corpus, split: str, root: pathlib.Path | None = None
         ) -> dict[str, list]:
  """The rows of one split as columns: {feature: [value per row]}.

  `root` defaults to `paths.data_dir()`, looked up now, not at import.
  """
  spec = _split(corpus, split)
  root = root or paths.data_dir()
  rows = [r for p in spec.parts for r in _read_part(p, root, spec.empty)]
  if spec.unescape:
    rows = [tuple(html.unescape(v) for v in r) for r in rows]
  held = _HeldOut(corpus, split, root)
  rows = [r for r in rows if held.keep(r)]
  held.report()
  if spec.dedup:
    unique = list(dict.fromkeys(rows))
    logging.info("%s/%s: dropped %d repeated row(s)", corpus.name, split,
                 len(rows) - len(unique))
    rows = unique
  columns = list(zip(*rows)) or [()] * len(corpus.features)
  return {f: list(c) for f, c in zip(corpus.features, columns)}


def _names(part: Part) -> tuple[str, ...]:
  """The files of a part, where it reads files."""
  return part.files if isinstance(part, Lines) else \
      (part.file,) if isinstance(part, Tsv) else ()


def files(corpus: Corpus, split: str, root: pathlib.Path | None = None,
          held_out: bool = True) -> list[str]:
  """The files one split reads, where they are paths (a TFDS dataset or an
  STS set is named instead): with its held-out sets', what a cache of the
  split is checked against; without (`held_out` False), the files whose
  rows the split holds."""
  root = root or paths.data_dir()
  spec = corpus.splits[split]
  return [name for part in (*spec.parts, *(spec.held_out if held_out else ()))
          for name in ([str(_where(root, f)) for f in _names(part)]
                       or [repr(part)])]


def _bitext(corpus: str, lang: str, splits: Mapping[str, Split]) -> Corpus:
  return Corpus(f"bitext_{corpus}_{lang}_en", BITEXT, splits, (lang, "en"))


def _multi30k(lang: str) -> Corpus:
  # Split name -> file stem; the 2017 test sets have no Czech.
  stems = {"train": "train", "validation": "val",
           "test_2016_flickr": "test_2016_flickr",
           "test_2017_flickr": "test_2017_flickr",
           "test_2017_mscoco": "test_2017_mscoco",
           "test_2018_flickr": "test_2018_flickr"}
  if lang == "cs":
    del stems["test_2017_flickr"], stems["test_2017_mscoco"]
  return _bitext("multi30k", lang, {
      split: Split((Lines((f"multi30k_task1/{stem}.{lang}.gz",
                           f"multi30k_task1/{stem}.en.gz")),))
      for split, stem in stems.items()})


# newstest_train_pool: sets in all three pairs (one shared English file) and
# the sets of a single pair.
_POOL_4WAY = ("news-test2008", "newssyscomb2009", "newstest2009",
              "newstest2010", "newstest2011")
_POOL_PAIR = {
    "de": tuple(f"newstest{y}" for y in range(2015, 2021)),
    "cs": tuple(f"newstest{y}" for y in range(2015, 2019)),
    "fr": ("newsdiscusstest2015",),
}


def _pool_files(lang: str) -> list[tuple[str, str]]:
  """(non-English, English) file names of a pair, in sorted name order."""
  code = _ISO3[lang]
  files = [(f"{s}.{code}.gz", f"{s}.eng.gz") for s in _POOL_4WAY]
  files += [(f"{s}.{code}-eng.{code}.gz", f"{s}.{code}-eng.eng.gz")
            for s in _POOL_PAIR[lang]]
  return sorted(files)


def _newstest_pool(lang: str) -> Corpus:
  parts = tuple(Lines((f"newstest_train_pool/{x}", f"newstest_train_pool/{e}"))
                for x, e in _pool_files(lang))
  # A pair newstest2012 or 2013 (the dev and alignment sets) also holds:
  # cs-en's "Ano." / "Yes.", once.
  held_out = tuple(_newstest_dev_part(lang, y) for y in _DEV_YEARS)
  return _bitext("newstest_pool", lang, {"train": Split(parts,
                                                        held_out=held_out)})


_DEV_YEARS = ("newstest2012", "newstest2013")


def _newstest_dev_part(lang: str, year: str) -> Lines:
  code = _ISO3[lang]
  return Lines((f"newstest_dev/{year}.{code}", f"newstest_dev/{year}.eng"))


def _newstest_dev(lang: str) -> Corpus:
  return _bitext("newstest_dev", lang, {
      year: Split((_newstest_dev_part(lang, year),)) for year in _DEV_YEARS})


def _opennmt_wmt() -> Corpus:
  # src-* is English, tgt-* German; src-train has one empty line. Moses
  # tokenized, so escaped.
  d = "opennmt_wmt_ende_10k"
  return _bitext("opennmt_wmt", "de", {
      "train": Split(
          (Lines((f"{d}/tgt-train.txt.gz", f"{d}/src-train.txt.gz")),),
          empty="drop", unescape=True),
      "validation": Split((Lines((f"{d}/tgt-val.txt", f"{d}/src-val.txt")),),
                          unescape=True),
  })


def _generaltest(lang: str, refs: tuple[str, str]) -> Corpus:
  files = tuple(f"generaltest2022/generaltest2022.{lang}-en.ref.{r}.en"
                for r in refs)
  return Corpus(f"paraphrase_en_generaltest2022_{lang}", PARAPHRASE,
                {"train": Split((Lines(files),))})


def _mono(name: str, *parts: Part, **options) -> Corpus:
  return Corpus(f"mono_en_{name}", MONO, {"train": Split(parts, **options)})


def sts_task_name(set_name: str) -> str:
  """`STS14.images` -> `sts_sts14_images`."""
  return "sts_" + set_name.lower().replace(".", "_").replace("-", "_")


def _sts_corpora() -> list[Corpus]:
  names = sts.all_names() + ["STSb.dev-tuning"]
  return [Corpus(sts_task_name(n), STS, {"test": Split((StsSet(n),))})
          for n in names]


LANGS = ("de", "fr", "cs")
_DOMAINS = "mono_en_domains"
# English sides of the pool, each 4-way set's file once. Dedup then drops the
# ~5.9k English-original lines that the 2015-2018 de-en and cs-en sets share.
_POOL_EN = sorted({e for l in LANGS for _, e in _pool_files(l)})

PARAPHRASE_CORPORA = (
    _generaltest("de", ("A", "B")),
    _generaltest("cs", ("B", "C")),
    Corpus("paraphrase_en_wikiauto", PARAPHRASE, {"train": Split((Tsv(
        "wikiauto_simplification/"
        "gem2021_full_no_split.valid.complex_simple.tsv.gz", 2, (0, 1)),))}),
)
BITEXT_CORPORA = (
    *(_multi30k(l) for l in LANGS),
    *(_newstest_pool(l) for l in LANGS),
    _opennmt_wmt(),
    *(_newstest_dev(l) for l in LANGS),
)
MONO_CORPORA = (
    _mono("biomed", Lines((f"{_DOMAINS}/biomed/biomed_all.dedup.tok.en.gz",))),
    _mono("brown",
          Tsv(f"{_DOMAINS}/brown.genre_fileid_sent.tsv.gz", 3, (2,))),
    _mono("abc_rural", Lines((f"{_DOMAINS}/abc_rural.txt.gz",)), empty="drop"),
    _mono("news", *(Lines((f"newstest_train_pool/{e}",)) for e in _POOL_EN),
          dedup=True),
)
STS_CORPORA = tuple(_sts_corpora())
# PPDB 1.0 XXXL lexical synonyms: one-word "sentences", for word vectors
# (configs/ppdb_words.py); not in the human mixture.
PPDB_CORPORA = (Corpus("paraphrase_en_ppdb_lexical", PARAPHRASE, {
    "train": Split((Tsv("ppdb_lexical/"
                        "ppdb-1.0-xxxl-lexical.extended.synonyms.uniquepairs"
                        ".gz", 2, (0, 1)),))}),)

# Paraphrase mixtures: name -> member corpora, mixed by their sizes.
MIXTURES = {"paraphrase_en_human": tuple(c.name for c in PARAPHRASE_CORPORA)}

CORPORA: dict[str, Corpus] = {
    c.name: c for c in PARAPHRASE_CORPORA + BITEXT_CORPORA + MONO_CORPORA
    + STS_CORPORA + PPDB_CORPORA}


def get(name: str) -> Corpus:
  if name not in CORPORA:
    raise KeyError(f"unknown corpus {name!r}; known: {', '.join(CORPORA)}")
  return CORPORA[name]


def catalogue() -> dict[str, str]:
  """Task and Mixture names with their features and splits, for `--help`."""
  out = {c.name: f"{', '.join(c.features)} | splits: {', '.join(c.splits)}"
         for c in CORPORA.values()}
  out.update({name: f"mixture of {', '.join(members)}"
              for name, members in MIXTURES.items()})
  return out


def selected_bins(folder: str) -> dict[str, tuple[str, str]]:
  """Bin number -> its (non-English, English) files, from the summary.json
  of a `paraflax select-domain` folder: 1, 2, ... by diffCE, then r1, r2,
  ... (the random same-size controls) where it has them."""
  path = os.path.join(folder, "summary.json")
  if not os.path.isfile(path):
    raise errors.DataError(f"{path}: not found; {folder} is not a finished "
                           "`paraflax select-domain` output (rerun it).")
  with open(path, encoding="utf-8") as f:
    summary = json.load(f)
  return {str(b["bin"]): tuple(
      os.path.join(folder, f"{prefix}_{str(b['bin']).removeprefix('r')}.{l}")
      for l in (summary["src_lang"], "en"))
          for key, prefix in (("bins", "bin"), ("random_bins", "random"))
          for b in summary.get(key, ())}
