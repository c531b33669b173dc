"""Sentence alignment recovery (Kim et al. 2019): shuffle one side of a
parallel test set, give every sentence its nearest neighbour on the other
side under a similarity, and count the sentences not matched with their
translation, in % of the set, source->target and target->source.

The shuffle is part of the protocol, but an exact nearest-neighbour search
does not see line order: it changes the error only through ties (equal
scores go to the lower index), i.e. repeated sentences. newstest2012 has a
few (2 German, 4 French, 1 Czech line repeated with different English);
such a line can match only one of its partners, and the other counts as an
error, as it does for every system.

Source is the non-English side, target English.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from paraflax import errors
from paraflax.data import corpora
from paraflax.evaluation import fixed_width
from paraflax.mining import similarity

Embed = Callable[[Sequence[str], str], np.ndarray]  # (texts, lang) -> [N, d]

# Test set name -> (corpus family, split) in `paraflax.data.corpora`.
TEST_SETS: dict[str, tuple[str, str]] = {
    "newstest2012": ("newstest_dev", "newstest2012"),
    "multi30k_test_2016_flickr": ("multi30k", "test_2016_flickr"),
    "multi30k_test_2017_flickr": ("multi30k", "test_2017_flickr"),
    "multi30k_test_2017_mscoco": ("multi30k", "test_2017_mscoco"),
    "multi30k_test_2018_flickr": ("multi30k", "test_2018_flickr"),
}
LANGS = corpora.LANGS


def _corpus(family: str, lang: str) -> corpora.Corpus:
  if lang not in LANGS:
    raise errors.ConfigError(f"no alignment test sets for {lang!r}; use one "
                             f"of {LANGS} (each with English).")
  return corpora.get(f"bitext_{family}_{lang}_en")


def available_sets(lang: str) -> list[str]:
  """The bundled test sets that exist for `lang`-English (Multi30k's 2017
  sets have no Czech; other languages have none: name your own)."""
  if lang not in LANGS:
    return []
  return [name for name, (family, split) in TEST_SETS.items()
          if split in _corpus(family, lang).splits]


def test_sets(lang: str, dev: str = "",
              sets: Sequence[str] | None = None
              ) -> tuple[list[str], list[str]]:
  """(the test sets to score, the bundled ones left out). A checkpoint
  picked on the dev set `dev` (a data spec, "" for none) is no test of
  it: `sets` None scores every bundled set of `lang`-English but one that
  shares a file with `dev`; a set `sets` names (a bundled name or a data
  spec) that shares one stops the run."""
  from paraflax.data import specs  # pylint: disable=g-import-not-at-top
  if sets is None:
    picked = set(specs.row_files(dev)) if dev else set()
    bundled = available_sets(lang)
    left_out = [name for name in bundled
                if picked & set(specs.row_files(_spec(name, lang)))]
    return [name for name in bundled if name not in left_out], left_out
  specs.refuse_shared_files(
      [("data.dev", dev),
       *(("test set", _spec(name, lang) if name in TEST_SETS else name)
         for name in sets)],
      "The dev set picks the checkpoint; test on another set, or name "
      "another dev set (--config.data.dev=SPEC).")
  return list(sets), []


def left_out_lines(left_out: Sequence[str], dev: str) -> list[str]:
  """What a table says of the bundled sets it leaves out."""
  return [f"{name}: not scored, it is data.dev={dev}, which picked the "
          "checkpoint" for name in left_out]


def _spec(name: str, lang: str) -> str:
  family, split = TEST_SETS[name]
  return f"{_corpus(family, lang).name}:{split}"


def load(name: str, lang: str) -> tuple[list[str], list[str]]:
  """(non-English lines, English lines) of a test set, line-aligned: a
  bundled one (`TEST_SETS`), or any bitext named by a data spec
  (`paraflax.data.specs`)."""
  if name not in TEST_SETS:
    from paraflax.data import specs  # pylint: disable=g-import-not-at-top
    if not (specs.is_spec(name) or ":" in name):
      raise errors.ConfigError(
          f"unknown alignment test set {name!r}; use one of "
          f"{sorted(TEST_SETS)}, or a data spec of your own bitext "
          "(tsv:FILE, lines:SRC,EN; docs/your-data.md).")
    pairs = specs.pairs(name)
    return [x for x, _ in pairs], [e for _, e in pairs]
  family, split = TEST_SETS[name]
  if name not in available_sets(lang):
    raise errors.ConfigError(f"{name} has no {lang} side; {lang}-en has "
                             f"{', '.join(available_sets(lang))}.")
  columns = corpora.read(_corpus(family, lang), split)
  return columns["source"], columns["target"]


def recovery_errors(x, y, name: str, *, seed: int = 0,
                    block_pairs: int = 1 << 18, **ctx) -> dict[str, float]:
  """Alignment recovery error rates (%) of aligned embeddings x_i ~ y_i.

  The target side is shuffled with `numpy.random.default_rng(seed)`; `name`
  and `ctx` select the similarity as in `similarity.prepare`. Returns
  src2tgt (share of x not retrieving their y), tgt2src and their mean.
  """
  if len(x) != len(y):
    raise errors.DataError(f"{len(x)} source but {len(y)} target "
                           "embeddings; a parallel test set has one of each "
                           "per line.")
  order = np.random.default_rng(seed).permutation(len(y))
  # Shuffled row j holds y[order[j]]: x_i's partner is at position[i].
  position = np.argsort(order)
  src2tgt, tgt2src = similarity.nearest(name, x, np.asarray(y)[order],
                                        block_pairs=block_pairs, **ctx)
  errors_src = 100 * float(np.mean(src2tgt != position))
  errors_tgt = 100 * float(np.mean(tgt2src != order))
  return {"src2tgt": errors_src, "tgt2src": errors_tgt,
          "mean": (errors_src + errors_tgt) / 2}


def evaluate(embed: Embed, lang: str, similarities: Mapping[str, Mapping],
             sets: Sequence[str] | None = None, *, seed: int = 0
             ) -> list[dict]:
  """One row per test set x similarity; `similarities` maps a name of
  `similarity.SIMILARITIES` to its context (e.g. {"csls": {"k": 10}}).
  `sets` defaults to every test set of `lang`."""
  rows = []
  for name in available_sets(lang) if sets is None else sets:
    src, tgt = load(name, lang)
    x, y = embed(src, lang), embed(tgt, "en")
    rows += [{"set": name, "lang": lang, "n": len(src), "similarity": sim,
              **recovery_errors(x, y, sim, seed=seed, **ctx)}
             for sim, ctx in similarities.items()]
  return rows


def format_table(rows: Sequence[dict]) -> str:
  """Error rates in %, both directions and their mean."""
  width = max([27, *(len(r["set"]) for r in rows)]) + 1
  key = fixed_width.key
  return fixed_width.table(
      [("set", f"<{width}", key("set")), ("lang", "<6", key("lang")),
       ("n", ">6", key("n")), "  ", ("similarity", "<11", key("similarity")),
       ("src->en", ">9.2f", key("src2tgt")),
       ("en->src", ">9.2f", key("tgt2src")), ("mean", ">8.2f", key("mean"))],
      rows)
