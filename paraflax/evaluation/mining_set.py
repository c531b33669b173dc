"""Mining benchmarks on real news text: gold pairs hidden among distractors.

No BUCC data is available offline, so the benchmarks are built from the WMT
news test sets (BUCC-style: most sentences on each side have no translation
on the other).

Recipe of `build(lang, split, gold=G, distractors=D, seed=S)`:

1. Gold pairs: G aligned lines of `newstest_dev/newstest2012.{xxx,eng}` for
   split "dev" and of `newstest2013` for "test" (xxx = deu, fra, ces). Only
   lines whose non-English and English sentences each occur once in that set
   are eligible, so every gold pair is unambiguous.
2. Distractors: D non-English lines from the `SRC` sets of
   `newstest_train_pool` and D English lines from its `TGT` sets (table
   below). Within a benchmark the two sides come from disjoint sets, so no
   distractor's translation is on the other side. A candidate is dropped when
   it repeats an earlier candidate, equals any sentence of the gold set's year
   on its side, or has a known translation (a line it is aligned with in any
   of the files used) among the other side's gold-year sentences or
   candidates. Too few usable lines for D is an error.
3. Each side (the G gold sentences, then the D distractors) is shuffled with
   its own permutation from `numpy.random.default_rng(S)`; the gold pairs
   follow their sentences. Every line on a side is distinct.

Distractor sets (`SIDES`), files of `newstest_train_pool`:

  lang split  SRC: non-English distractors    TGT: English distractors
  de   dev    news-test2008, newssyscomb2009,  newstest2009, newstest2011
              newstest2010
  cs   dev    as de dev                        as de dev
  fr   dev    as de dev                        newstest2009, newstest2011,
                                               newsdiscusstest2015 (fr-en)
  de   test   newstest2015, 2017, 2019 (de-en) newstest2016, 2018, 2020 (de-en)
  cs   test   newstest2015, 2017 (cs-en)       newstest2016, 2018 (cs-en)
  fr   test   newstest2009, newstest2011,      news-test2008, newssyscomb2009,
              newsdiscusstest2015 (fr-en)      newstest2010

For de and cs the four distractor groups (dev/test x src/tgt) are disjoint.
fr-en has too few pool lines for four groups of 4000 (12.1k in all), so its
test set swaps the sides of its dev sets: each side draws on other sets in
dev and test, but test's distractors on one side translate dev's on the
other (harmless: each benchmark is mined on its own).

`paraflax.evaluation.mining` evaluates embeddings of these benchmarks.
"""
from __future__ import annotations

import collections
import os
import sys
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from paraflax import errors
from paraflax import files
from paraflax.data import paths
from paraflax.data import readers
# MiningSet, Pair, FILES, read, read_bucc, read_gold, write: mining_set's
# names too, as its callers use them.
from paraflax.evaluation.mining_set_files import FILES  # pylint: disable=unused-import
from paraflax.evaluation.mining_set_files import MiningSet
from paraflax.evaluation.mining_set_files import Pair  # pylint: disable=unused-import
from paraflax.evaluation.mining_set_files import read  # pylint: disable=unused-import
from paraflax.evaluation.mining_set_files import read_bucc
from paraflax.evaluation.mining_set_files import read_gold  # pylint: disable=unused-import
from paraflax.evaluation.mining_set_files import write

Row = tuple[str, str]  # (non-English, English)

_ISO3 = {"de": "deu", "fr": "fra", "cs": "ces"}
_LANGUAGE = {"de": "German", "fr": "French", "cs": "Czech"}
GOLD_SETS = {"dev": "newstest2012", "test": "newstest2013"}
_GOLD_FOLDER = "newstest_dev"
_POOL_FOLDER = "newstest_train_pool"


class Sides(NamedTuple):
  """Pool sets (file stems, `{x}` = the three-letter language code) that
  give the non-English (src) and English (tgt) distractors."""
  src: tuple[str, ...]
  tgt: tuple[str, ...]


_OLD_SRC = ("news-test2008", "newssyscomb2009", "newstest2010")
_OLD_TGT = ("newstest2009", "newstest2011")
_DISCUSS = "newsdiscusstest2015.{x}-eng"


def _years(*years: int) -> tuple[str, ...]:
  return tuple(f"newstest{y}.{{x}}-eng" for y in years)


SIDES: dict[str, dict[str, Sides]] = {
    "de": {"dev": Sides(_OLD_SRC, _OLD_TGT),
           "test": Sides(_years(2015, 2017, 2019), _years(2016, 2018, 2020))},
    "cs": {"dev": Sides(_OLD_SRC, _OLD_TGT),
           "test": Sides(_years(2015, 2017), _years(2016, 2018))},
    "fr": {"dev": Sides(_OLD_SRC, _OLD_TGT + (_DISCUSS,)),
           "test": Sides(_OLD_TGT + (_DISCUSS,), _OLD_SRC)},
}


# --- Building ---------------------------------------------------------------


def _read_rows(folder: str, stem: str, lang: str, suffix: str) -> list[Row]:
  code = _ISO3[lang]
  stem = stem.format(x=code)
  rows, _ = readers.read_parallel(
      [paths.data_path(folder, f"{stem}.{code}{suffix}"),
       paths.data_path(folder, f"{stem}.eng{suffix}")])
  return rows


def _pool_name(stems: Sequence[str], lang: str, side: int) -> str:
  code = _ISO3[lang]
  ext = (code, "eng")[side]
  return ", ".join(f"{_POOL_FOLDER}/{s.format(x=code)}.{ext}.gz"
                   for s in stems)


def _unique_rows(rows: Sequence[Row]) -> list[Row]:
  """Rows whose sentences each occur once: unambiguous gold pairs."""
  counts = [collections.Counter(r[side] for r in rows) for side in (0, 1)]
  return [r for r in rows if counts[0][r[0]] == 1 and counts[1][r[1]] == 1]


def _usable(candidates: Sequence[Row], side: int, same_side: set[str],
            other_side: set[str], aligned: dict[str, set[str]]) -> list[str]:
  """The distinct sentences of `candidates`' `side` that are not in
  `same_side` and have no aligned sentence in `other_side`."""
  out = dict.fromkeys(r[side] for r in candidates)
  return [s for s in out
          if s not in same_side and not aligned[s] & other_side]


def _sample(items: Sequence, n: int, rng: np.random.Generator, what: str
            ) -> list:
  if n > len(items):
    raise errors.DataError(
        f"asked for {n} {what} but only {len(items)} usable lines exist; ask "
        f"for {len(items)} or fewer.")
  return [items[i] for i in rng.choice(len(items), n, replace=False)]


def _check_request(lang: str, split: str, gold: int, distractors: int
                   ) -> None:
  if lang not in SIDES:
    raise errors.ConfigError(f"no mining benchmark for {lang!r}; use one of "
                             f"{sorted(SIDES)} (each with English).")
  if split not in GOLD_SETS:
    raise errors.ConfigError(f"split {split!r}: use one of "
                             f"{sorted(GOLD_SETS)}.")
  if gold < 1 or distractors < 0:
    raise errors.ConfigError(f"--gold {gold} --distractors {distractors}: "
                             "need at least 1 gold pair and >= 0 distractors.")


def gold_rows(lang: str, split: str) -> list[Row]:
  """The rows of the news set the `split` benchmark of `lang`-English
  draws its gold pairs from (`GOLD_SETS`)."""
  _check_request(lang, split, 1, 0)
  return _read_rows(_GOLD_FOLDER, GOLD_SETS[split], lang, "")


def build(lang: str, split: str, *, gold: int = 1000,
          distractors: int = 4000, seed: int = 0) -> MiningSet:
  """The `split` ("dev" or "test") benchmark of `lang`-English: `gold` pairs
  and `distractors` extra sentences per side, as the module docstring says."""
  _check_request(lang, split, gold, distractors)
  sides = SIDES[lang][split]
  gold_rows = _read_rows(_GOLD_FOLDER, GOLD_SETS[split], lang, "")
  src_rows = [r for s in sides.src
              for r in _read_rows(_POOL_FOLDER, s, lang, ".gz")]
  tgt_rows = [r for s in sides.tgt
              for r in _read_rows(_POOL_FOLDER, s, lang, ".gz")]
  aligned = [collections.defaultdict(set), collections.defaultdict(set)]
  for x, e in gold_rows + src_rows + tgt_rows:
    aligned[0][x].add(e)
    aligned[1][e].add(x)
  gold_side = [{r[side] for r in gold_rows} for side in (0, 1)]
  usable_src = _usable(src_rows, 0, gold_side[0],
                       gold_side[1] | {e for _, e in tgt_rows}, aligned[0])
  usable_tgt = _usable(tgt_rows, 1, gold_side[1],
                       gold_side[0] | {x for x, _ in src_rows}, aligned[1])
  eligible = _unique_rows(gold_rows)
  rng = np.random.default_rng(seed)
  where = f"{lang}-en {split}"
  pairs = _sample(eligible, gold, rng, f"gold pairs for {where}")
  src = [x for x, _ in pairs] + _sample(
      usable_src, distractors, rng, f"{_LANGUAGE[lang]} distractors for "
      f"{where} (from {_pool_name(sides.src, lang, 0)})")
  tgt = [e for _, e in pairs] + _sample(
      usable_tgt, distractors, rng, f"English distractors for {where} (from "
      f"{_pool_name(sides.tgt, lang, 1)})")
  recipe = _recipe(lang, split, gold, distractors, seed, {
      "eligible": len(eligible), "gold_lines": len(gold_rows),
      "src_usable": len(usable_src), "src_lines": len(src_rows),
      "tgt_usable": len(usable_tgt), "tgt_lines": len(tgt_rows)})
  return _shuffled(src, tgt, gold, rng, recipe)


def _shuffled(src: list[str], tgt: list[str], gold: int,
              rng: np.random.Generator, recipe: str) -> MiningSet:
  """Each side shuffled by its own permutation; sentence i < `gold` of
  `src` and of `tgt` are a pair."""
  src_order, tgt_order = rng.permutation(len(src)), rng.permutation(len(tgt))
  # Sentence i moves to line position[i]; the gold sentences are i < gold.
  src_position, tgt_position = np.argsort(src_order), np.argsort(tgt_order)
  return MiningSet(
      src=[src[i] for i in src_order], tgt=[tgt[i] for i in tgt_order],
      gold=frozenset((int(src_position[i]), int(tgt_position[i]))
                     for i in range(gold)),
      recipe=recipe)


def _eligible(data: str) -> tuple[list[Row], list[Row]]:
  """The rows of bitext `data` and those a benchmark draws from: both
  sides non-empty, each sentence occurring once."""
  from paraflax.data import specs  # pylint: disable=g-import-not-at-top
  rows = specs.pairs(data)
  return rows, _unique_rows([r for r in rows if r[0].strip()
                             and r[1].strip()])


def usable(data: str) -> int:
  """How many rows of bitext `data` a benchmark can draw from."""
  return len(_eligible(data)[1])


def fitted_sizes(gold: int, distractors: int, rows: int) -> tuple[int, int]:
  """(gold, distractors) as asked when gold + 2 x distractors rows fit in
  `rows`; else both cut in the same proportion to fit."""
  need = gold + 2 * distractors
  if need <= rows:
    return gold, distractors
  fit_gold = max(1, rows * gold // need)
  return fit_gold, max(0, (rows - fit_gold) // 2)


def build_from_bitext(data: str, *, gold: int = 1000,
                      distractors: int = 4000, seed: int = 0) -> MiningSet:
  """A benchmark from any bitext (a data spec, `paraflax.data.specs`):
  `gold` pairs hidden among `distractors` sentences per side, all drawn
  from the rows whose sentences each occur once in it, in three disjoint
  groups (gold pairs, source-side and English-side distractors), so that
  no distractor's translation is on the other side."""
  if gold < 1 or distractors < 0:
    raise errors.ConfigError(f"--gold {gold} --distractors {distractors}: "
                             "need at least 1 gold pair and >= 0 distractors.")
  rows, eligible = _eligible(data)
  rng = np.random.default_rng(seed)
  need = gold + 2 * distractors
  drawn = _sample(eligible, need, rng, f"rows of {data} (gold + 2 x "
                  "distractors, each sentence occurring once in it)")
  pairs, src_rows, tgt_rows = (drawn[:gold], drawn[gold:gold + distractors],
                               drawn[gold + distractors:])
  src = [x for x, _ in pairs] + [x for x, _ in src_rows]
  tgt = [e for _, e in pairs] + [e for _, e in tgt_rows]
  recipe = "\n".join([
      f"Mining benchmark from {data}, built by `paraflax mining-set --data "
      f"{data} --gold {gold} --distractors {distractors} --seed {seed}`.",
      "",
      f"src.txt, tgt.txt: {gold + distractors} sentences each (source, "
      f"English); gold.tsv: {gold} lines `src_idx<TAB>tgt_idx` (0-based).",
      f"{need} of the {len(eligible)} rows of {len(rows)} whose sentences "
      f"each occur once were drawn with numpy.random.default_rng({seed}): "
      f"the first {gold} are the gold pairs, the source sides of the next "
      f"{distractors} and the English sides of the last {distractors} the "
      "distractors; then each side was shuffled."]) + "\n"
  return _shuffled(src, tgt, gold, rng, recipe)


def _recipe(lang: str, split: str, gold: int, distractors: int, seed: int,
            counts: dict[str, int]) -> str:
  code, sides = _ISO3[lang], SIDES[lang][split]
  total = gold + distractors
  return "\n".join([
      f"Mining benchmark {lang}-en {split}, built by `paraflax mining-set "
      f"--lang {lang} --split {split} --gold {gold} --distractors "
      f"{distractors} --seed {seed}` (paraflax.evaluation.mining).",
      "",
      f"src.txt: {total} {_LANGUAGE[lang]} sentences; tgt.txt: {total} "
      "English sentences; one per line, every line on a side distinct.",
      f"gold.tsv: {gold} lines `src_idx<TAB>tgt_idx` (0-based line numbers) "
      f"of the translation pairs; the other {distractors} sentences per side "
      f"({100 * distractors / total:.0f}%) have no translation on the other "
      "side.",
      "",
      f"Gold pairs: {gold} aligned lines of {_GOLD_FOLDER}/"
      f"{GOLD_SETS[split]}.{{{code},eng}}, drawn from the {counts['eligible']} "
      f"of its {counts['gold_lines']} lines whose sentences each occur once "
      "in it.",
      f"{_LANGUAGE[lang]} distractors: {distractors} of {counts['src_usable']} "
      f"usable of {counts['src_lines']} lines of "
      f"{_pool_name(sides.src, lang, 0)}.",
      f"English distractors: {distractors} of {counts['tgt_usable']} usable "
      f"of {counts['tgt_lines']} lines of {_pool_name(sides.tgt, lang, 1)}.",
      "Usable: not a repeat, not equal to any sentence of the gold set on its "
      "side, and with no known translation (a sentence aligned with it in "
      "any of these files) among the other side's gold-set sentences or "
      "distractor candidates.",
      f"Gold and distractor sentences drawn, then each side shuffled, with "
      f"numpy.random.default_rng({seed}).",
  ]) + "\n"


def build_folder(output: str, *, lang: str | None = None,
                 split: str | None = None, data: str | None = None,
                 bucc: Sequence[str] | None = None, gold: int = 1000,
                 distractors: int = 4000, seed: int = 0,
                 overwrite: bool = False) -> MiningSet:
  """`paraflax mining-set`: a benchmark of the bundled news sets (`lang`,
  `split`), of any bitext (`data`, a data spec) or read from BUCC files
  (`bucc`: source, English and gold files), then `write` into `output`."""
  if os.path.exists(output) and not os.path.isdir(output):
    raise errors.ConfigError(f"{output}: is a file; give --output a folder.")
  given = [name for name, value in (("--lang/--split", lang or split),
                                    ("--data", data), ("--bucc", bucc))
           if value]
  if len(given) != 1:
    raise errors.ConfigError(
        "give one of --lang with --split (the bundled news sets), --data "
        "SPEC (any bitext) or --bucc SRC EN GOLD (BUCC files); got "
        f"{', '.join(given) or 'none'}.")
  # One run builds a folder: a second one stops here. The files are
  # compared whole when written (`write`), so another set is refused then.
  files.lock_output(output)
  if data:
    built = build_from_bitext(data, gold=gold, distractors=distractors,
                              seed=seed)
  elif bucc:
    built = read_bucc(*bucc)
  else:
    if not (lang and split):
      raise errors.ConfigError("--lang and --split go together.")
    built = build(lang, split, gold=gold, distractors=distractors, seed=seed)
  write(built, output, overwrite=overwrite)
  print(f"wrote {len(built.src)} x {len(built.tgt)} sentences with "
        f"{len(built.gold)} gold pairs to {output}", file=sys.stderr)
  return built
