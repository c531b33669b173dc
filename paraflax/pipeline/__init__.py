"""`paraflax pipeline`: the stages of the method strung together, each in
its own folder of the workdir W, resumable per stage.

The stages are data (`stages.STAGES`): a name, the stages it needs (and
those it uses when the config runs them), the function that runs it and how
much work it is. Each calls the function of the
command it stands for (`train`, `backtranslate`, `score-paraphrases`,
`eval-sts`, `mining-set`, `embed`, `mining-eval`, `mine`), which resumes
after a kill by itself; `W/<stage>/DONE.json`, written last and atomically,
marks a stage finished, and a rerun skips it. `W/pipeline.json.meta.json`
holds the config W was started with: another one is refused unless
--overwrite. This module runs the planned stages (planning.py) in order.
"""
from __future__ import annotations

import json
import os
import time

import ml_collections

from paraflax import errors
from paraflax import faults
from paraflax import files
from paraflax.pipeline import plan as plan_lib
from paraflax.pipeline import planning
from paraflax.pipeline import progress as progress_lib
from paraflax.pipeline import report
from paraflax.pipeline import stages
from paraflax.recipes import workdir as workdir_lib

CLAIM = "pipeline.json"  # W/pipeline.json: the plan; its .meta.json, config


def _claim(plan: plan_lib.Plan, overwrite: bool) -> None:
  """W is this config's: another config's W is refused unless overwrite
  (which removes its stages)."""
  w = plan.workdir
  workdir_lib.check_writable(w)
  leftovers = [plan.folder(s) for s in stages.STAGES]
  leftovers.append(os.path.join(w, report.REPORT))
  files.claim_output(os.path.join(w, CLAIM),
                     json.loads(plan.config.to_json()), overwrite=overwrite,
                     leftovers=leftovers)
  text = json.dumps({"stages": list(plan.config.stages),
                     "configs": {k: json.loads(v.to_json())
                                 for k, v in plan.configs.items()}},
                    indent=2) + "\n"
  path = os.path.join(w, CLAIM)
  if not os.path.exists(path) or _read(path) != text:  # new, or W moved
    files.write_text_atomic(path, text)


def _read(path: str) -> str:
  with open(path, encoding="utf-8") as f:
    return f.read()


def _run_stage(plan: plan_lib.Plan, stage: str) -> dict:
  os.makedirs(plan.folder(stage), exist_ok=True)
  start = time.monotonic()
  summary = stages.STAGES[stage].run(plan)
  record = {"stage": stage, "seconds": round(time.monotonic() - start, 1),
            **summary}
  faults.moment("pipeline.stage_ran")
  files.write_text_atomic(os.path.join(plan.folder(stage), plan_lib.DONE),
                          json.dumps(record, indent=2) + "\n")
  return record


def run(config: ml_collections.ConfigDict, workdir: str,
        until: str | None = None, only: str | None = None,
        overwrite: bool = False) -> dict[str, dict]:
  """`paraflax pipeline`: runs the config's stages (up to --until, or only
  --only) into `workdir`, skipping finished ones; their DONE records."""
  todo = planning.selected(config, until, only, overwrite)
  plan = planning.plan(config, workdir)
  if only:
    unfinished = [s for s in planning.needs(config, only)
                  if plan.done(s) is None]
    if unfinished:
      raise errors.ConfigError(
          f"--only {only} needs {', '.join(unfinished)} finished first; run "
          f"them (--until {unfinished[-1]}, or without --only).")
  _claim(plan, overwrite)
  progress = progress_lib.Progress(plan, todo)
  records = {}
  for index, stage in enumerate(todo):
    record = plan.done(stage)
    if record is not None:
      done = os.path.join(plan.folder(stage), plan_lib.DONE)
      print(f"== pipeline [{index + 1}/{len(todo)}] {stage}: finished "
            f"before ({done})", flush=True)
      records[stage] = record
      continue
    progress.say(index, stage, "start")
    with progress.running_stage(index, stage):
      records[stage] = _run_stage(plan, stage)
    progress.finished(stage, records[stage]["seconds"])
    progress.say(index, stage,
                 f"done in {progress_lib.clock(records[stage]['seconds'])}")
  if "report" in records:
    print(f"report: {os.path.join(workdir, report.REPORT)}", flush=True)
  return records
