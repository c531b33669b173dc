"""Bilingual pivot paraphrases (Bannard & Callison-Burch 2005): the
`paraflax pivot` command.

The bitexts are resolved from Tasks, prefixes or folders (`resolve`); per
pivot language the bitext is streamed, aligned and its phrase pairs counted
in blocks of `block_pairs` sentence pairs (`pivot_blocks`); each block's
counts are kept in `TABLE.parts/`, so a killed run redone with the same
command starts at the first missing block. The table of p(e2|e1)
(`pivot_probs`) is then written from the parts in bounded memory
(`pivot_table.write_table`).
"""
from __future__ import annotations

import dataclasses
import itertools
import logging
import os
from collections.abc import Callable, Iterator, Sequence

from paraflax import errors
from paraflax import files
from paraflax.data import corpora
from paraflax.data import readers
from paraflax.domain import pivot_blocks
from paraflax.domain import pivot_table
from paraflax.domain import selection_inputs

PIVOT_LANGS = ("de", "fr", "cs")
SELECTED = "selected:"  # as paraflax.data.tasks.SELECTED


@dataclasses.dataclass(frozen=True)
class Bitext:
  """One foreign-English source: `stream()` gives its (foreign, English)
  pairs one at a time (files are never held whole; a registered Task is
  read as the catalogue reads it), `read()` all of them."""
  name: str
  lang: str
  stream: Callable[[], Iterator[tuple[str, str]]]

  def read(self) -> list[tuple[str, str]]:
    return list(self.stream())


def _task(spec: str) -> Bitext | None:
  name, _, split = spec.partition(":")
  corpus = corpora.CORPORA.get(name)
  if corpus is None or corpus.pair is None:
    return None

  def stream() -> Iterator[tuple[str, str]]:
    columns = corpora.read(corpus, split or "train")
    return zip(columns["source"], columns["target"])

  return Bitext(spec, corpus.pair[0], stream)


def _one_language(prefix: str, lang: str) -> Bitext:
  return Bitext(prefix, lang, lambda: readers.iter_parallel(
      [f"{prefix}.{lang}", f"{prefix}.en"]))


def _mixed(prefix: str) -> list[Bitext]:
  """The bitexts of a mixed-language prefix (P.mul, P.en and P.langs, the
  language of each row, as a `select-domain` bin of a mul source): one per
  language, in code order, each its rows in file order."""
  def stream(lang: str) -> Callable[[], Iterator[tuple[str, str]]]:
    return lambda: ((x, e) for x, e, l in readers.iter_parallel(
        [f"{prefix}.{s}" for s in (selection_inputs.MIXED, "en",
                                   selection_inputs.LANGS)])
                    if l == lang)

  codes = sorted(set(readers.iter_lines(
      f"{prefix}.{selection_inputs.LANGS}")))
  return [Bitext(prefix, lang, stream(lang)) for lang in codes]


def _prefix(prefix: str) -> list[Bitext]:
  """The bitexts of prefix P: P.en with one of P.de / P.fr / P.cs, or
  with P.mul and P.langs; none when P is neither."""
  if not os.path.isfile(f"{prefix}.en"):
    return []
  if all(os.path.isfile(f"{prefix}.{s}")
         for s in (selection_inputs.MIXED, selection_inputs.LANGS)):
    return _mixed(prefix)
  langs = [l for l in PIVOT_LANGS if os.path.isfile(f"{prefix}.{l}")]
  return [_one_language(prefix, langs[0])] if len(langs) == 1 else []


def _selected(spec: str) -> list[Bitext]:
  """`selected:FOLDER:BIN`, a bin Task of `paraflax select-domain`."""
  if not spec.startswith(SELECTED):
    return []
  folder, _, number = spec[len(SELECTED):].rpartition(":")
  bins = corpora.selected_bins(folder)
  if number not in bins:
    raise errors.DataError(f"--bitext {spec}: {folder} has bins "
                           f"{', '.join(bins) or 'none'}.")
  return _prefix(bins[number][1].removesuffix(".en"))


def resolve(spec: str) -> list[Bitext]:
  """A registered bitext Task (`name` or `name:split`, default train), a
  bin Task `selected:FOLDER:BIN`, a file prefix P with P.en and one of
  P.de / P.fr / P.cs (a bin's files: SEL/bin_1), or with P.mul and P.langs
  (a bin of a mixed source: one bitext per language), or a folder: every
  such prefix in it, in name order."""
  task = _task(spec)
  found = _selected(spec) or ([task] if task else []) or _prefix(spec)
  if found:
    return found
  if os.path.isdir(spec):
    stems = sorted({os.path.join(spec, n[:-3]) for n in os.listdir(spec)
                    if n.endswith(".en")})
    out = [b for stem in stems for b in _prefix(stem)]
    if out:
      return out
  raise errors.DataError(
      f"--bitext {spec}: neither a bitext Task (paraflax tasks: "
      "bitext_<corpus>_<xx>_en[:split], selected:SEL:<bin>), nor a prefix P with P.en and one of "
      f"P.{', P.'.join(PIVOT_LANGS)} (or P.mul and P.langs), nor a folder "
      "holding such pairs.")


def build_table(bitext: Sequence[str], output: str, config,
                overwrite: bool = False) -> dict:
  """`paraflax pivot`: the paraphrase table of `bitext` (Tasks, prefixes
  or folders) at `output`; returns the throughput summary."""
  c = config.pivot
  sources = [b for spec in bitext for b in resolve(spec)]
  # pivot.languages: the pivot languages read, () every one of the bitexts.
  wanted = tuple(c.get("languages", ()))
  if wanted:
    sources = [b for b in sources if b.lang in wanted]
    if not sources:
      raise errors.ConfigError(
          f"pivot.languages={wanted}: none of --bitext {' '.join(bitext)} "
          "is in these languages; name bitext of them, or set "
          "--config.pivot.languages=() to pivot through every language.")
  files.check_output(output)
  parts = output + ".parts"
  # eflomal learns from the pairs it aligns together: each language's
  # sources are aligned as one corpus (two bins of a selection, or three
  # Tasks), not source by source. An empty pivot.languages is left out of
  # the settings, as tables built before the key resume.
  settings = {"bitext": [(b.name, b.lang) for b in sources],
              "pivot": {k: v for k, v in c.to_dict().items()
                        if k != "languages" or v},
              "aligned": "per language"}
  files.claim_output(output, settings, overwrite=overwrite,
                     leftovers=[parts])
  os.makedirs(parts, exist_ok=True)
  by_lang: dict[str, list[str]] = {}
  for lang in dict.fromkeys(b.lang for b in sources):
    pairs = itertools.chain.from_iterable(b.stream() for b in sources
                                          if b.lang == lang)
    for b in itertools.count():
      block = list(itertools.islice(pairs, c.block_pairs))
      if not block:
        break
      path = os.path.join(parts, f"{lang}-{b:05d}.npz")
      if not os.path.exists(path):
        counts, stats = pivot_blocks.extract_block(
            block, c.max_phrase_len, c.max_sentence_words,
            c.align_iterations)
        pivot_blocks.save_block(path, counts, stats)
        logging.info("%s block %d: %d pairs aligned in %.1f s, %d phrase "
                     "pairs in %.1f s", lang, b, stats.pairs,
                     stats.align_s, stats.phrase_pairs, stats.extract_s)
      by_lang.setdefault(lang, []).append(path)
  return pivot_table.write_table(by_lang, output, c)
