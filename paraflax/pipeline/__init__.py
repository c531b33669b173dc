"""`paraflax pipeline`: the stages of the method strung together, each in
its own folder of the workdir W, resumable per stage.

The stages are data (`STAGES`): a name, the stages it needs (and those it
uses when the config runs them), the function that runs it and how much
work it is. Each calls the function of the
command it stands for (`train`, `backtranslate`, `score-paraphrases`,
`eval-sts`, `mining-set`, `embed`, `mining-eval`, `mine`), which resumes
after a kill by itself; `W/<stage>/DONE.json`, written last and atomically,
marks a stage finished, and a rerun skips it. `W/pipeline.json.meta.json`
holds the config W was started with: another one is refused unless
--overwrite.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import time
from collections.abc import Callable, Sequence

import ml_collections

from paraflax import config as config_lib
from paraflax import errors
from paraflax import faults
from paraflax import files
from paraflax.data import filters
from paraflax.pipeline import report
from paraflax.recipes import sweep
from paraflax.recipes import workdir as workdir_lib

DONE = "DONE.json"
LMS = ("", "references")  # score.lm: what the lm_ppl LM is trained on
CLAIM = "pipeline.json"  # W/pipeline.json: the plan; its .meta.json, config
# The config files whose keys each stage's `settings` block sets.
BASES = {"nmt": "configs/nmt.py:{lang}", "words": "configs/ppdb_words.py",
         "gran": "configs/paraphrase.py:gran",
         "bilingual": "configs/bilingual.py:{lang}", "mining": "configs/mine.py"}
VECTORS = "word_vectors.txt"  # W/words/word_vectors.txt: the GRAN's words


@dataclasses.dataclass
class Plan:
  """One pipeline: its config, workdir and the stages' own configs."""
  config: ml_collections.ConfigDict
  workdir: str
  configs: dict[str, ml_collections.ConfigDict]

  def folder(self, stage: str) -> str:
    return os.path.join(self.workdir, stage)

  def done(self, stage: str) -> dict | None:
    path = os.path.join(self.folder(stage), DONE)
    if not os.path.exists(path):
      return None
    with open(path, encoding="utf-8") as f:
      return json.load(f)


@dataclasses.dataclass(frozen=True)
class Stage:
  name: str
  needs: tuple[str, ...]
  run: Callable[[Plan], dict]  # does the work; the summary for DONE.json
  units: Callable[[Plan], float]  # work, x config.seconds_per_unit: ETA
  what: str
  uses: tuple[str, ...] = ()  # needed only where the config runs them


# --- the stages ---------------------------------------------------------------


def _best(workdir: str, metric: str) -> float | None:
  """The best value of `metric` in a workdir's metrics.jsonl."""
  values = [row[metric] for row in report.metrics(workdir) if metric in row]
  return max(values) if values else None


def _train(plan: Plan, stage: str) -> dict:
  from paraflax.recipes import train  # pylint: disable=g-import-not-at-top
  config = plan.configs[stage]
  folder = plan.folder(stage)
  train.train(ml_collections.ConfigDict(config), folder)
  return {"workdir": os.path.abspath(folder), "steps": config.train_steps,
          "select": config.select, "best": _best(folder, config.select)}


def _nmt(plan: Plan) -> dict:
  existing = plan.config.nmt.workdir
  if not existing:
    return _train(plan, "nmt")
  saved = workdir_lib.load_config(existing, "nmt")
  return {"workdir": os.path.abspath(existing), "trained_here": False,
          "steps": saved.train_steps, "select": saved.select,
          "best": _best(existing, saved.select)}


def _words(plan: Plan) -> dict:
  """PARAGRAM-style vectors from PPDB, exported for the GRAN (whose config
  points at them: `_stage_configs`)."""
  from paraflax.recipes import paraphrase  # pylint: disable=g-import-not-at-top
  summary = _train(plan, "words")
  vectors = os.path.join(plan.folder("words"), VECTORS)
  paraphrase.export_word_vectors(summary["workdir"], vectors)
  return {**summary, "vectors": os.path.abspath(vectors)}


def _lines(path: str) -> int:
  """The records of a finished JSONL output (the whole file, whichever run
  wrote which part)."""
  with open(path, "rb") as f:
    return sum(1 for _ in f)


def _bitext_rows(data: str, sentences: int) -> list[tuple[str, str]]:
  """The first `sentences` (non-English, English) rows of data.train's
  first spec, rows with an empty side left out."""
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  rows = []
  for e in tasks.examples(data, "train"):
    if e["source"].strip() and e["target"].strip():
      rows.append((e["source"], e["target"]))
      if len(rows) == sentences:
        break
  if not rows:
    raise errors.DataError(f"data.train's {data} has no pair with two "
                           "non-empty sides to back-translate.")
  return rows


def _backtranslate(plan: Plan) -> dict:
  from paraflax.recipes import translation  # pylint: disable=g-import-not-at-top
  c, folder = plan.config.backtranslate, plan.folder("backtranslate")
  rows = _bitext_rows(plan.config.data.train[0], c.sentences)
  src = os.path.join(folder, f"src.{plan.config.lang}")
  ref = os.path.join(folder, "ref.en")
  for path, side in ((src, 0), (ref, 1)):
    files.write_once(path, "".join(r[side] + "\n" for r in rows),
                     overwrite=False)
  output = os.path.join(folder, "bt.jsonl")
  translation.backtranslate(
      plan.done("nmt")["workdir"], output, beam=c.beam, nbest=c.nbest,
      batch_size=c.batch_size, stop=c.stop, src=src, ref=ref)
  return {"output": os.path.abspath(output),
          "references": os.path.abspath(ref), "sentences": len(rows),
          "records": _lines(output)}


def _score(plan: Plan) -> dict:
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  from paraflax.filtering import lm as lm_lib  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import score_paraphrases  # pylint: disable=g-import-not-at-top
  c, folder = plan.config, plan.folder("score")
  bt = plan.done("backtranslate")
  lm = None
  if c.score.lm:
    lm = os.path.join(folder, "lm.bin")
    lm_lib.train_lm(bt["references"], lm, order=c.score.lm_order,
                    discount_fallback=True)
  output = os.path.join(folder, "scored.jsonl")
  score_paraphrases.score_file(bt["output"], output, lm=lm)
  # The Task the GRAN trains on, counted here: a filter that keeps fewer
  # than max_pairs stops the pipeline before the GRAN starts.
  name = tasks.register_backtranslated(output, c.filter.to_dict(),
                                       c.max_pairs, plan.configs["gran"].seed)
  pairs = sum(1 for _ in tasks.examples(name, "train"))
  return {"output": os.path.abspath(output), "records": _lines(output),
          "filter": c.filter.to_dict(), "max_pairs": c.max_pairs,
          "pairs": pairs, "task": plan.configs["gran"].data.task}


def _sts(plan: Plan) -> dict:
  from paraflax.recipes import evaluate  # pylint: disable=g-import-not-at-top
  result = evaluate.eval_sts(plan.done("gran")["workdir"])
  output = os.path.join(plan.folder("sts"), "sts.json")
  files.write_text_atomic(output, json.dumps(result, indent=2) + "\n")
  semeval = result.get("semeval_2012_2015", {})
  return {"output": os.path.abspath(output),
          "checkpoint_step": result["checkpoint_step"],
          "sts12_15_mean_pearson": semeval.get("mean_pearson")}


def _embed_benchmark(workdir: str, folders: Sequence[str], lang: str
                     ) -> tuple[dict[str, str], int]:
  """Each folder's src.txt (`lang`) and tgt.txt (en) embedded by one load
  of the bilingual encoders (as `paraflax embed`): {"<split>_<side>_emb":
  path} and the dimension."""
  from paraflax.data import readers  # pylint: disable=g-import-not-at-top
  from paraflax.mining import embeddings_io  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import embedders  # pylint: disable=g-import-not-at-top
  embed, _ = embedders.load(workdir, [lang, "en"])
  paths, dim = {}, 0
  for folder in folders:
    for side, side_lang in (("src", lang), ("tgt", "en")):
      texts, _ = readers.read_lines(os.path.join(folder, f"{side}.txt"))
      path = os.path.join(folder, f"{side}.f32")
      emb = embed(texts, side_lang)
      embeddings_io.write(path, emb)
      paths[f"{os.path.basename(folder)}_{side}_emb"] = path
      dim = emb.shape[1]
  return paths, dim


def _mining(plan: Plan) -> dict:
  from paraflax.evaluation import mining  # pylint: disable=g-import-not-at-top
  from paraflax.evaluation import mining_set  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import embedders  # pylint: disable=g-import-not-at-top
  c, folder = plan.config.mining, plan.folder("mining")
  options = plan.configs["mining"]
  sets = {split: os.path.join(folder, split) for split in ("dev", "test")}
  for split, path in sets.items():
    named = {"data": c[split]} if c[split] else {"lang": plan.config.lang,
                                                 "split": split}
    mining_set.build_folder(path, gold=c.gold, distractors=c.distractors,
                            seed=c.seed, **named)
  emb, dim = _embed_benchmark(plan.done("bilingual")["workdir"],
                              list(sets.values()), plan.config.lang)
  table = os.path.join(folder, "eval.json")
  rows = mining.evaluate_folders(sets["dev"], sets["test"], dim=dim,
                                 k=options.k, output=table, **emb)
  chosen = next(r for r in rows if r["margin"] == options.margin
                and r["retrieval"] == options.retrieval)
  mined = os.path.join(folder, "test_mined.tsv")
  embedders.mine_files(mined, options.to_dict(), dim=dim,
                       src_emb=emb["test_src_emb"],
                       tgt_emb=emb["test_tgt_emb"])
  threshold = chosen["threshold"]
  return {"table": os.path.abspath(table), "mined": os.path.abspath(mined),
          "dev": sets["dev"], "test": sets["test"], "dim": dim,
          "margin": options.margin, "retrieval": options.retrieval,
          "threshold": threshold if math.isfinite(threshold) else None,
          **{k: chosen[k] for k in ("test_precision", "test_recall",
                                    "test_f1")}}


def _report(plan: Plan) -> dict:
  return report.write(plan, [s for s in plan.config.stages if s != "report"])


def _steps(stage: str) -> Callable[[Plan], float]:
  return lambda plan: plan.configs[stage].train_steps


def _nmt_units(plan: Plan) -> float:
  return 0 if plan.config.nmt.workdir else plan.configs["nmt"].train_steps


STAGES: dict[str, Stage] = {s.name: s for s in (
    Stage("nmt", (), _nmt, _nmt_units,
          "train the X->en NMT (or use nmt.workdir)"),
    Stage("backtranslate", ("nmt",), _backtranslate,
          lambda p: p.config.backtranslate.sentences,
          "back-translate the bitext's non-English side (n-best)"),
    Stage("score", ("backtranslate",), _score,
          lambda p: p.config.backtranslate.sentences
          * p.config.backtranslate.nbest,
          "score the pairs (score-paraphrases) and count the filtered Task"),
    Stage("words", (), _words, _steps("words"),
          "train PPDB word vectors for the GRAN (configs/ppdb_words.py)"),
    Stage("gran", ("score",), lambda p: _train(p, "gran"), _steps("gran"),
          "train the GRAN on the filtered back-translated pairs",
          uses=("words",)),
    Stage("sts", ("gran",), _sts, lambda p: 1, "STS table of the GRAN"),
    Stage("bilingual", (), lambda p: _train(p, "bilingual"),
          _steps("bilingual"), "train the bilingual encoders"),
    Stage("mining", ("bilingual",), _mining,
          lambda p: 2 * (p.config.mining.gold + p.config.mining.distractors),
          "mining benchmark, its P/R/F1 and the mined test pairs"),
    Stage("report", (), _report, lambda p: 1,
          "W/report.md: curves, tables, mined pairs, times"),
)}


# --- checking the config ------------------------------------------------------


def _stage_names(names: Sequence[str], where: str) -> None:
  unknown = [n for n in names if n not in STAGES]
  if unknown:
    raise errors.ConfigError(
        f"{where}: unknown stage {', '.join(map(repr, unknown))}; the stages "
        f"are {', '.join(STAGES)}.")


def needs(config: ml_collections.ConfigDict, stage: str) -> tuple[str, ...]:
  """What `stage` needs finished first; the report, every other stage the
  config runs."""
  if stage == "report":
    return tuple(s for s in config.stages if s != "report")
  used = tuple(s for s in STAGES[stage].uses if s in config.stages)
  return STAGES[stage].needs + used


def _check_stages(config: ml_collections.ConfigDict) -> None:
  _stage_names(config.stages, "config stages")
  for i, stage in enumerate(config.stages):
    missing = [n for n in needs(config, stage) if n not in config.stages[:i]]
    if missing:
      raise errors.ConfigError(
          f"config stages: {stage} needs {', '.join(missing)} before it; "
          "add them (in order: " + ", ".join(STAGES) + "), or leave "
          f"{stage} out.")
  if config.score.lm not in LMS:
    raise errors.ConfigError(
        f"score.lm={config.score.lm!r}: give one of {LMS} (\"\": no "
        "lm_ppl; references: a KenLM of the back-translated references).")
  keys = set(config.seconds_per_unit.keys())
  if keys != set(STAGES):
    raise errors.ConfigError(
        f"seconds_per_unit names {', '.join(sorted(keys))}; give one value "
        f"per stage: {', '.join(STAGES)}.")


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
  scored = os.path.join(os.path.abspath(workdir), "score", "scored.jsonl")
  config_lib.override(found["gran"], (), {
      "data.task": "backtranslated:" + scored,
      "data.filter": config.filter.to_dict(),
      "data.max_pairs": config.max_pairs})
  if "words" in config.stages:  # the GRAN starts from the stage's vectors
    config_lib.override(found["gran"], (), {
        "model.word_vectors": os.path.join(os.path.abspath(workdir), "words",
                                           VECTORS),
        "data.vocab_from_vectors": True,
        "model.word_dim": found["words"].model.word_dim})
  try:
    filters.parse(config.filter.to_dict(), config.max_pairs)
  except errors.ConfigError as e:
    raise errors.ConfigError(f"filter / max_pairs: {e}") from e
  return found


def plan(config: ml_collections.ConfigDict, workdir: str) -> Plan:
  """The checked plan: unknown stages, keys or a mismatched NMT workdir stop
  here, before anything is written."""
  _check_stages(config)
  configs = _stage_configs(config, workdir)
  _check_nmt_workdir(config)
  return Plan(config, workdir, configs)


def _selected(config: ml_collections.ConfigDict, until: str | None,
              only: str | None, overwrite: bool) -> list[str]:
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
  stages = list(config.stages)
  if only:
    return [only]
  return stages[:stages.index(until) + 1] if until else stages


# --- running ------------------------------------------------------------------


def _clock(seconds: float) -> str:
  seconds = int(round(seconds))
  return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Progress:
  """One line per stage start and finish: elapsed time and the time left,
  the preset's estimate scaled by how fast this run's stages went."""

  def __init__(self, plan_: Plan, todo: Sequence[str]):
    self.plan, self.todo = plan_, list(todo)
    self.start = time.monotonic()
    self.spent = self.estimated = 0.0

  def estimate(self, stage: str) -> float:
    return (STAGES[stage].units(self.plan)
            * self.plan.config.seconds_per_unit[stage])

  def _left(self, stages: Sequence[str]) -> float:
    speed = self.spent / self.estimated if self.estimated else 1.0
    return speed * sum(self.estimate(s) for s in stages)

  def say(self, index: int, stage: str, event: str) -> None:
    starts = event == "start"
    left = self.todo[index:] if starts else self.todo[index + 1:]
    what = f", {STAGES[stage].what}" if starts else ""
    print(f"== pipeline [{index + 1}/{len(self.todo)}] {stage}: {event} "
          f"(elapsed {_clock(time.monotonic() - self.start)}, about "
          f"{_clock(self._left(left))} left{what})", flush=True)

  def finished(self, stage: str, seconds: float) -> None:
    self.spent += seconds
    self.estimated += self.estimate(stage)


def _claim(plan_: Plan, overwrite: bool) -> None:
  """W is this config's: another config's W is refused unless overwrite
  (which removes its stages)."""
  w = plan_.workdir
  workdir_lib.check_writable(w)
  leftovers = [plan_.folder(s) for s in STAGES]
  leftovers.append(os.path.join(w, report.REPORT))
  files.claim_output(os.path.join(w, CLAIM),
                     json.loads(plan_.config.to_json()), overwrite=overwrite,
                     leftovers=leftovers)
  text = json.dumps({"stages": list(plan_.config.stages),
                     "configs": {k: json.loads(v.to_json())
                                 for k, v in plan_.configs.items()}},
                    indent=2) + "\n"
  path = os.path.join(w, CLAIM)
  if not os.path.exists(path) or _read(path) != text:  # new, or W moved
    files.write_text_atomic(path, text)


def _read(path: str) -> str:
  with open(path, encoding="utf-8") as f:
    return f.read()


def _run_stage(plan_: Plan, stage: str) -> dict:
  os.makedirs(plan_.folder(stage), exist_ok=True)
  start = time.monotonic()
  summary = STAGES[stage].run(plan_)
  record = {"stage": stage, "seconds": round(time.monotonic() - start, 1),
            **summary}
  faults.moment("pipeline.stage_ran")
  files.write_text_atomic(os.path.join(plan_.folder(stage), DONE),
                          json.dumps(record, indent=2) + "\n")
  return record


def run(config: ml_collections.ConfigDict, workdir: str,
        until: str | None = None, only: str | None = None,
        overwrite: bool = False) -> dict[str, dict]:
  """`paraflax pipeline`: runs the config's stages (up to --until, or only
  --only) into `workdir`, skipping finished ones; their DONE records."""
  todo = _selected(config, until, only, overwrite)
  plan_ = plan(config, workdir)
  if only:
    unfinished = [s for s in needs(config, only) if plan_.done(s) is None]
    if unfinished:
      raise errors.ConfigError(
          f"--only {only} needs {', '.join(unfinished)} finished first; run "
          f"them (--until {unfinished[-1]}, or without --only).")
  _claim(plan_, overwrite)
  progress = Progress(plan_, todo)
  records = {}
  for index, stage in enumerate(todo):
    record = plan_.done(stage)
    if record is not None:
      print(f"== pipeline [{index + 1}/{len(todo)}] {stage}: finished "
            f"before ({os.path.join(plan_.folder(stage), DONE)})", flush=True)
      records[stage] = record
      continue
    progress.say(index, stage, "start")
    records[stage] = _run_stage(plan_, stage)
    progress.finished(stage, records[stage]["seconds"])
    progress.say(index, stage, f"done in {_clock(records[stage]['seconds'])}")
  if "report" in records:
    print(f"report: {os.path.join(workdir, report.REPORT)}", flush=True)
  return records
