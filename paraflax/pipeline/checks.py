"""A pipeline's bitext, checked before any stage: the English column of
each TSV looks English, and no pair of an evaluation set (data.dev, the
mining benchmarks' bitext) is a pair of data.train."""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import ml_collections

from paraflax import errors

Pair = tuple[str, str]
_EXAMPLES = 3  # pairs a refusal shows
_SHOWN = 60  # characters of a side a refusal shows


def trained(config: ml_collections.ConfigDict) -> list[str]:
  """The stages that train on data.train here (not given a workdir)."""
  return [s for s in ("nmt", "bilingual") if s in config.stages
          and not config[s].get("workdir")]


def english_sides(config: ml_collections.ConfigDict) -> None:
  """Every tsv: spec the pipeline reads as (source, English) has a second
  column that looks English (`english_side.check`, its first 1,000 rows),
  or the run stops now with the spec's fixes: swapped columns would train
  every model in the wrong direction."""
  from paraflax.data import english_side  # pylint: disable=g-import-not-at-top
  named = [("data.train", spec) for spec in config.data.train]
  named.append(("data.dev", config.data.dev))
  if "mining" in config.stages:
    named += [(f"mining.{split}", config.mining[split])
              for split in ("dev", "test")]
  for key, spec in named:
    if spec:
      english_side.check(spec, f"{key}:")


def _rows(spec: str) -> Iterator[Pair]:
  from paraflax.data import corpora  # pylint: disable=g-import-not-at-top
  from paraflax.data import specs  # pylint: disable=g-import-not-at-top
  data = specs.parse(spec)
  return ((r[0], r[1]) for r in corpora.iter_rows(data.corpus, data.split))


def _normal(pair: Pair) -> Pair:
  """A pair as compared: each side stripped of surrounding white space."""
  return pair[0].strip(), pair[1].strip()


class _HeldOut(NamedTuple):
  key: str  # the setting that names the set
  pairs: list[Pair]
  harm: str  # what training on its pairs would do
  fix: str


def _held_out(config: ml_collections.ConfigDict,
              found: dict[str, ml_collections.ConfigDict],
              stages: Sequence[str]) -> list[_HeldOut]:
  """The evaluation sets whose pairs data.train must not hold: data.dev
  (unless every stage that trains here allows it:
  `data.allow_dev_overlap`), and the bitext of the mining benchmarks
  where the bilingual encoders train here."""
  from paraflax.evaluation import mining_set  # pylint: disable=g-import-not-at-top
  sets = []
  strict = [s for s in stages
            if not found[s].data.get("allow_dev_overlap", False)]
  if config.data.dev and strict:
    allow = " ".join(f"--config.{s}.settings.data.allow_dev_overlap=true"
                     for s in strict)
    sets.append(_HeldOut(
        f"data.dev={config.data.dev}", list(_rows(config.data.dev)),
        "dev figures and the best checkpoint would be chosen on training "
        "data", "Remove them from the training files, or name another dev "
        f"set: --config.data.dev=SPEC ({allow} allows them)."))
  if "mining" in config.stages and "bilingual" in stages:
    for split in ("dev", "test"):
      spec = config.mining[split]
      key = (f"mining.{split}={spec}" if spec else
             f"mining.{split} (the bundled {mining_set.GOLD_SETS[split]} "
             f"{config.lang}-en)")
      rows = (list(_rows(spec)) if spec
              else mining_set.gold_rows(config.lang, split))
      sets.append(_HeldOut(
          key, rows, "the bilingual encoders would train on the "
          "benchmark's gold pairs, and its P/R/F1 would be that of pairs "
          "seen in training", "Remove them from the training files, or "
          "build the benchmark from bitext kept out of training: "
          f"--config.mining.{split}=SPEC (docs/your-data.md)."))
  return sets


def _shown(pair: Pair) -> str:
  cut = [s if len(s) <= _SHOWN else s[:_SHOWN - 3] + "..." for s in pair]
  return f"{cut[0]!r} / {cut[1]!r}"


# data.train is read once, before any stage, as a stream: its first pairs
# for the vocabulary check, and every pair looked up in the set of the
# evaluation sets' pairs (thousands: memory holds them, not the training
# pairs). That pass costs the reading of data.train: at 10^7 pairs about
# 30 s (a TSV reads at about 350,000 rows a second on one core of a 2-core
# Xeon; the lookups add about 2 %), once, where the stages that train read
# those pairs over and over.
def read_training(config: ml_collections.ConfigDict,
                  found: dict[str, ml_collections.ConfigDict],
                  sample: int) -> list[Pair]:
  """data.train's first `sample` pairs where a stage trains on it here
  (else none), read in the pass that refuses a run whose data.train holds
  pairs of an evaluation set (`_held_out`): the message counts them, shows
  a few and names the fix."""
  stages = trained(config)
  if not stages:
    return []
  held = _held_out(config, found, stages)
  wanted = {p for h in held for p in map(_normal, h.pairs) if all(p)}
  first, seen = [], set()
  rows = itertools.chain.from_iterable(map(_rows, config.data.train))
  for pair in rows:
    if len(first) < sample:
      first.append(pair)
    elif not wanted:
      break
    if wanted:
      pair = _normal(pair)
      if pair in wanted:
        seen.add(pair)
  for h in held:
    same = [p for p in map(_normal, h.pairs) if p in seen]
    if same:
      examples = "; ".join(map(_shown, list(dict.fromkeys(same))[:_EXAMPLES]))
      raise errors.ConfigError(
          f"{h.key}: {len(same):,} of its {len(h.pairs):,} pairs are in "
          f"data.train too (each side compared stripped of surrounding "
          f"white space), e.g. {examples}; {h.harm}. {h.fix}")
  return first
