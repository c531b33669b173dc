"""A pipeline config checked and made a Plan before anything is written:
its stages and their order, its data, a given NMT workdir, and each stage's
config (its file, then the pipeline's `settings` for it)."""
from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence

import ml_collections

from paraflax import config as config_lib
from paraflax import errors
from paraflax.data import filters
from paraflax.inference import sweep
from paraflax.pipeline import checks
from paraflax.pipeline import plan as plan_lib
from paraflax.pipeline import stages
from paraflax.recipes import config_check
from paraflax.recipes import workdir as workdir_lib

LMS = ("", "references")  # score.lm: what the lm_ppl LM is trained on
# The config files whose keys each stage's `settings` block sets.
_TRAINED = ("nmt", "words", "gran", "bilingual")  # stages that run a recipe
BASES = {"nmt": "configs/nmt.py:{lang}", "words": "configs/ppdb_words.py",
         "gran": "configs/paraphrase.py:gran",
         "bilingual": "configs/bilingual.py:{lang}", "mining": "configs/mine.py"}


def _stage_names(names: Sequence[str], where: str) -> None:
  unknown = [n for n in names if n not in stages.STAGES]
  if unknown:
    raise errors.ConfigError(
        f"{where}: unknown stage {', '.join(map(repr, unknown))}; the stages "
        f"are {', '.join(stages.STAGES)}.")


def needs(config: ml_collections.ConfigDict, stage: str) -> tuple[str, ...]:
  """What `stage` needs finished first; the report, every other stage the
  config runs."""
  if stage == "report":
    return tuple(s for s in config.stages if s != "report")
  used = tuple(s for s in stages.STAGES[stage].uses if s in config.stages)
  return stages.STAGES[stage].needs + used


def _check_stages(config: ml_collections.ConfigDict) -> None:
  _stage_names(config.stages, "config stages")
  for i, stage in enumerate(config.stages):
    missing = [n for n in needs(config, stage) if n not in config.stages[:i]]
    if missing:
      raise errors.ConfigError(
          f"config stages: {stage} needs {', '.join(missing)} before it; "
          "add them (in order: " + ", ".join(stages.STAGES) + "), or leave "
          f"{stage} out.")
  if config.score.lm not in LMS:
    raise errors.ConfigError(
        f"score.lm={config.score.lm!r}: give one of {LMS} (\"\": no "
        "lm_ppl; references: a KenLM of the back-translated references).")
  keys = set(config.seconds_per_unit.keys())
  if keys != set(stages.STAGES):
    raise errors.ConfigError(
        f"seconds_per_unit names {', '.join(sorted(keys))}; give one value "
        f"per stage: {', '.join(stages.STAGES)}.")


_LANG = re.compile(r"_([a-z]{2})_en$")


def _nmt_languages(saved: ml_collections.ConfigDict) -> set[str]:
  """The source languages of an NMT config's catalogued bitext (X of
  *_X_en), or its `lang` where its config records one."""
  data = saved.data
  names = [n.partition(":")[0] for n in (*data.train, data.dev)]
  found = {m[1] for m in map(_LANG.search, names) if m}
  return found | ({saved.lang} if "lang" in saved else set())


def _check_nmt_workdir(config: ml_collections.ConfigDict) -> None:
  workdir = config.nmt.workdir
  if not workdir:
    return
  saved = workdir_lib.load_config(workdir, "nmt")
  found = _nmt_languages(saved)
  if found != {config.lang}:
    raise errors.ConfigError(
        f"nmt.workdir {workdir} translates {'/'.join(sorted(found)) or '?'}"
        f"-en (its data: {', '.join(saved.data.train)}), but the "
        f"preset {config.preset} is {config.lang}-en. Give a {config.lang}-en "
        "NMT workdir, or nmt.workdir='' to train one.")


def _check_bilingual_workdir(config: ml_collections.ConfigDict) -> None:
  workdir = config.bilingual.workdir
  if not workdir:
    return
  from paraflax.recipes import bilingual  # pylint: disable=g-import-not-at-top
  found = set(bilingual.languages(workdir_lib.load_config(workdir,
                                                          "bilingual")))
  if found != {config.lang, "en"}:
    raise errors.ConfigError(
        f"bilingual.workdir {workdir} embeds {'/'.join(sorted(found))}, but "
        f"the preset {config.preset} is {config.lang}-en. Give a "
        f"{config.lang}-en bilingual workdir, or bilingual.workdir='' to "
        "train one.")


def _check_splits(config: ml_collections.ConfigDict) -> None:
  """No split reads a file of another that must be kept apart from it:
  data.dev of data.train, the mining benchmarks of data.train, mining.dev
  of mining.test, mining.test of data.dev (which picks the encoders'
  checkpoint; mining.dev may be data.dev)."""
  from paraflax.data import specs  # pylint: disable=g-import-not-at-top
  train = [("data.train", spec) for spec in config.data.train]
  specs.refuse_shared_files(
      [*train, ("data.dev", config.data.dev)],
      "Name another dev set: --config.data.dev=SPEC (docs/your-data.md).")
  if "mining" in config.stages:
    specs.refuse_shared_files(
        [*train, ("mining.dev", config.mining.dev),
         ("mining.test", config.mining.test)],
        "Build the benchmarks from bitext kept out of training, each its "
        "own: --config.mining.dev=SPEC, --config.mining.test=SPEC "
        "(docs/your-data.md).")
    specs.refuse_shared_files(
        [("data.dev", config.data.dev), ("mining.test", config.mining.test)],
        "data.dev picks the encoders' checkpoint: build the test benchmark "
        "from other bitext, --config.mining.test=SPEC (docs/your-data.md).")


def _check_data(config: ml_collections.ConfigDict) -> None:
  """Every data spec names files, and the mining benchmarks have data,
  before any stage runs."""
  from paraflax.data import specs  # pylint: disable=g-import-not-at-top
  from paraflax.evaluation import mining_set  # pylint: disable=g-import-not-at-top
  for spec in (*config.data.train, config.data.dev):
    pair = specs.parse(spec).corpus.pair if spec else None
    if pair and pair != (config.lang, "en"):
      raise errors.ConfigError(
          f"data: {spec} is {'-'.join(pair)} bitext, but lang is "
          f"{config.lang}; name {config.lang}-en bitext in data.train and "
          "data.dev (docs/your-data.md).")
  if "mining" not in config.stages:
    return
  for split in ("dev", "test"):
    if config.mining[split]:
      pair = specs.parse(config.mining[split]).corpus.pair
      if pair and pair != (config.lang, "en"):
        raise errors.ConfigError(
            f"mining.{split}: {config.mining[split]} is {'-'.join(pair)} "
            f"bitext, but lang is {config.lang}; name {config.lang}-en "
            f"bitext: --config.mining.{split}=SPEC, or "
            f"--config.mining.{split}= for the bundled news sets of de, fr "
            "or cs (docs/your-data.md).")
    elif config.lang not in mining_set.SIDES:
      raise errors.ConfigError(
          f"mining.{split}: no bundled news benchmark for {config.lang}-en; "
          f"name a bitext to build it from: --config.mining.{split}=SPEC "
          "(docs/your-data.md).")
  _fit_mining_sizes(config)


def _fit_mining_sizes(config: ml_collections.ConfigDict) -> None:
  """Benchmarks that fit the bitext named for them (read now: seconds, not
  after the training): where mining.dev or mining.test has fewer usable
  rows than gold + 2 x distractors, both benchmarks draw sizes cut in the
  same proportion to fit the smaller (the same sizes, so that the dev
  threshold suits the test benchmark), and a warning says so."""
  from paraflax.evaluation import mining_set  # pylint: disable=g-import-not-at-top
  named = {s: config.mining[s] for s in ("dev", "test") if config.mining[s]}
  if not named:
    return
  rows = {s: mining_set.usable(spec) for s, spec in named.items()}
  split = min(rows, key=rows.get)
  asked = config.mining.gold, config.mining.distractors
  fitted = mining_set.fitted_sizes(*asked, rows[split])
  if fitted == asked:
    return
  logging.warning(
      "mining.%s: %s has %s usable rows (both sides non-empty, each sentence "
      "once), fewer than the %s that %s gold pairs and %s distractors a side "
      "draw: both benchmarks draw %s gold pairs and %s distractors a side "
      "instead. --config.mining.gold and --config.mining.distractors choose "
      "other sizes; more bitext keeps these.", split, named[split],
      f"{rows[split]:,}", f"{asked[0] + 2 * asked[1]:,}", asked[0], asked[1],
      *fitted)
  config.mining.gold, config.mining.distractors = fitted


# Pairs of data.train read to check the vocabularies before any stage:
# enough to meet a script's characters, read in seconds.
_VOCAB_SAMPLE = 100_000


def _check_vocabularies(config: ml_collections.ConfigDict,
                        found: dict[str, ml_collections.ConfigDict]) -> None:
  """Each subword vocabulary the pipeline trains can hold the characters
  of the training text (its first pairs), or the stage's `settings` keys
  to change are named now: sentencepiece would stop at the stage. The
  pass that reads them refuses evaluation pairs in data.train
  (`checks.read_training`)."""
  from paraflax.data import sentencepiece_vocab  # pylint: disable=g-import-not-at-top
  pairs = checks.read_training(config, found, _VOCAB_SAMPLE)
  for stage in checks.trained(config):
    sentencepiece_vocab.check_pair(pairs, prefix=f"{stage}.settings.vocab.",
                                   **found[stage].vocab.to_dict())


def _stage_configs(config: ml_collections.ConfigDict, workdir: str
                   ) -> dict[str, ml_collections.ConfigDict]:
  """Each stage's own config: its file, then its `settings` block; a key the
  file lacks stops here."""
  found = {}
  for stage, spec in BASES.items():
    path = os.path.join(sweep.ROOT, spec.format(lang=config.lang))
    base = config_lib.load_file(path)
    block = config[stage].settings
    try:
      found[stage] = config_lib.override(
          base, (), dict(sweep.flat_settings(block, base)))
    except errors.ConfigError as e:
      raise errors.ConfigError(f"{stage}.settings: {e}") from e
  if not config.data.train:
    raise errors.ConfigError(
        "data.train names no bitext: --config.data.train=SPEC (one or "
        "several; docs/your-data.md).")
  for stage in ("nmt", "bilingual"):  # the pipeline's data, one place
    config_lib.override(found[stage], (), {
        "data.train": tuple(config.data.train), "data.dev": config.data.dev})
  _check_data(config)
  _check_splits(config)
  checks.english_sides(config)
  _check_vocabularies(config, found)
  scored = os.path.join(os.path.abspath(workdir), "score", "scored.jsonl")
  config_lib.override(found["gran"], (), {
      "data.task": "backtranslated:" + scored,
      "data.filter": config.filter.to_dict(),
      "data.max_pairs": config.max_pairs})
  if "words" in config.stages:  # the GRAN starts from the stage's vectors
    config_lib.override(found["gran"], (), {
        "model.word_vectors": os.path.join(os.path.abspath(workdir), "words",
                                           stages.VECTORS),
        "data.vocab_from_vectors": True,
        "model.word_dim": found["words"].model.word_dim})
  try:
    filters.parse(config.filter.to_dict(), config.max_pairs)
  except errors.ConfigError as e:
    raise errors.ConfigError(f"filter / max_pairs: {e}") from e
  return found


def _check_trained(config: ml_collections.ConfigDict,
                   found: dict[str, ml_collections.ConfigDict],
                   workdir: str) -> None:
  """Each config a stage trains here, checked once, before any stage
  (`config_check`): its ranges, intervals and keys, and its folder. Its
  files are not listed: the earlier stages write some of them, and
  `_check_data` checks the pipeline's data."""
  for stage in _TRAINED:
    if stage in config.stages and not config[stage].get("workdir"):
      try:
        config_check.check(found[stage], os.path.join(workdir, stage),
                           files=False)
      except errors.ConfigError as e:
        raise errors.ConfigError(f"{stage}.settings: {e}") from e


def plan(config: ml_collections.ConfigDict, workdir: str) -> plan_lib.Plan:
  """The checked plan: unknown stages, keys, settings out of range or a
  mismatched NMT workdir stop here, before anything is written."""
  _check_stages(config)
  configs = _stage_configs(config, workdir)
  _check_trained(config, configs, workdir)
  _check_nmt_workdir(config)
  _check_bilingual_workdir(config)
  return plan_lib.Plan(config, workdir, configs)


def selected(config: ml_collections.ConfigDict, until: str | None,
             only: str | None, overwrite: bool) -> list[str]:
  """The stages to run: the config's, up to --until, or only --only."""
  for flag, name in (("--until", until), ("--only", only)):
    if name is not None:
      _stage_names([name], f"{flag} {name}")
      if name not in config.stages:
        raise errors.ConfigError(
            f"{flag} {name}: the config's stages leave it out "
            f"({', '.join(config.stages)}).")
  if until and only:
    raise errors.ConfigError("give --until or --only, not both.")
  if only and overwrite:
    raise errors.ConfigError(
        f"--only {only} --overwrite: --overwrite removes every stage, the "
        f"ones {only} needs too; run without --only to start afresh.")
  order = list(config.stages)
  if only:
    return [only]
  return order[:order.index(until) + 1] if until else order
