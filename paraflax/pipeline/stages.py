"""The pipeline's stages, a registry (`STAGES`): for each, the stages it
needs, the function that runs it (calling the command it stands for) and
how much work it is."""
from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
from collections.abc import Callable, Sequence

import ml_collections

from paraflax import errors
from paraflax import files
from paraflax.pipeline import plan as plan_lib
from paraflax.pipeline import report
from paraflax.recipes import workdir as workdir_lib

VECTORS = "word_vectors.txt"  # W/words/word_vectors.txt: the GRAN's words


@dataclasses.dataclass(frozen=True)
class Stage:
  name: str
  needs: tuple[str, ...]
  # run does the work and returns the summary for DONE.json; units is the
  # work, which x config.seconds_per_unit is the ETA.
  run: Callable[[plan_lib.Plan], dict]
  units: Callable[[plan_lib.Plan], float]
  what: str
  uses: tuple[str, ...] = ()  # needed only where the config runs them


def _best(workdir: str, metric: str) -> float | None:
  """The best value of `metric` in a workdir's metrics.jsonl."""
  values = [row[metric] for row in report.metrics(workdir) if metric in row]
  return max(values) if values else None


def _train(plan: plan_lib.Plan, stage: str) -> dict:
  from paraflax.recipes import train  # pylint: disable=g-import-not-at-top
  config = plan.configs[stage]
  folder = plan.folder(stage)
  train.run(ml_collections.ConfigDict(config), folder)  # planning checked it
  return {"workdir": os.path.abspath(folder), "steps": config.train_steps,
          "select": config.select, "best": _best(folder, config.select)}


def _trained_or_given(stage: str) -> Callable[[plan_lib.Plan], dict]:
  """A train stage that uses the finished workdir `<stage>.workdir` names
  (its recipe is the stage's, nmt or bilingual), else trains into
  W/<stage>."""
  def run(plan: plan_lib.Plan) -> dict:
    existing = plan.config[stage].workdir
    if not existing:
      return _train(plan, stage)
    saved = workdir_lib.load_config(existing, stage)
    return {"workdir": os.path.abspath(existing), "trained_here": False,
            "steps": saved.train_steps, "select": saved.select,
            "best": _best(existing, saved.select)}
  return run


def _words(plan: plan_lib.Plan) -> dict:
  """PARAGRAM-style vectors from PPDB, exported for the GRAN (whose config
  points at them: planning.py)."""
  from paraflax.inference import embedders  # pylint: disable=g-import-not-at-top
  summary = _train(plan, "words")
  vectors = os.path.join(plan.folder("words"), VECTORS)
  embedders.export_word_vectors(summary["workdir"], vectors)
  return {**summary, "vectors": os.path.abspath(vectors)}


def _lines(path: str) -> int:
  """The records of a finished JSONL output (the whole file, whichever run
  wrote which part)."""
  with open(path, "rb") as f:
    return sum(1 for _ in f)


def _bitext_rows(data: str, sentences: int) -> list[tuple[str, str]]:
  """The first `sentences` (non-English, English) rows of data.train's
  first spec, rows with an empty side left out; read as a stream, which
  stops there."""
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  examples = itertools.chain.from_iterable(tasks.iter_examples(data, "train"))
  rows = list(itertools.islice(
      ((e["source"], e["target"]) for e in examples
       if e["source"].strip() and e["target"].strip()), sentences))
  if not rows:
    raise errors.DataError(f"data.train's {data} has no pair with two "
                           "non-empty sides to back-translate.")
  return rows


def _backtranslate(plan: plan_lib.Plan) -> dict:
  from paraflax.inference import translation  # pylint: disable=g-import-not-at-top
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


def _score(plan: plan_lib.Plan) -> dict:
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  from paraflax.filtering import lm as lm_lib  # pylint: disable=g-import-not-at-top
  from paraflax.inference import score_paraphrases  # pylint: disable=g-import-not-at-top
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
  pairs = sum(len(chunk) for chunk in tasks.iter_examples(name, "train"))
  return {"output": os.path.abspath(output), "records": _lines(output),
          "filter": c.filter.to_dict(), "max_pairs": c.max_pairs,
          "pairs": pairs, "task": plan.configs["gran"].data.task}


def _sts(plan: plan_lib.Plan) -> dict:
  from paraflax.inference import evaluate  # pylint: disable=g-import-not-at-top
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
  from paraflax.inference import embedders  # pylint: disable=g-import-not-at-top
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


def _mining(plan: plan_lib.Plan) -> dict:
  from paraflax.evaluation import mining  # pylint: disable=g-import-not-at-top
  from paraflax.evaluation import mining_set  # pylint: disable=g-import-not-at-top
  from paraflax.inference import embedders  # pylint: disable=g-import-not-at-top
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


def _report(plan: plan_lib.Plan) -> dict:
  return report.write(plan, [s for s in plan.config.stages if s != "report"])


def _steps(stage: str) -> Callable[[plan_lib.Plan], float]:
  return lambda plan: plan.configs[stage].train_steps


def _trained_steps(stage: str) -> Callable[[plan_lib.Plan], float]:
  """The stage's train steps; none when `<stage>.workdir` gives it."""
  return lambda plan: (0 if plan.config[stage].workdir
                       else plan.configs[stage].train_steps)


STAGES: dict[str, Stage] = {s.name: s for s in (
    Stage("nmt", (), _trained_or_given("nmt"), _trained_steps("nmt"),
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
    Stage("bilingual", (), _trained_or_given("bilingual"),
          _trained_steps("bilingual"),
          "train the bilingual encoders (or use bilingual.workdir)"),
    Stage("mining", ("bilingual",), _mining,
          lambda p: 2 * (p.config.mining.gold + p.config.mining.distractors),
          "mining benchmark, its P/R/F1 and the mined test pairs"),
    Stage("report", (), _report, lambda p: 1,
          "W/report.md: curves, tables, mined pairs, times"),
)}
