"""`paraflax eval` (and its alias `eval-sts`): the evaluators of a trained
workdir's config (`evaluation.evaluators`), run on its best checkpoint."""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence

from paraflax import errors
from paraflax import files
from paraflax.evaluation import evaluators
from paraflax.recipes import workdir as workdir_lib

EVALS_FILE = "evals.json"
STS_FILE = "sts.json"


def _embedder(workdir: str) -> tuple[evaluators.Model, int]:
  from paraflax.inference import embedders  # pylint: disable=g-import-not-at-top
  embed, step = embedders.load(workdir, [])
  return evaluators.Model(embed=embed), step


def _translator(workdir: str, decode: Sequence[str] = ()
                ) -> tuple[evaluators.Model, int]:
  from paraflax.recipes import nmt  # pylint: disable=g-import-not-at-top
  translator, params, step = nmt.load_translator(workdir, decode=decode)
  return evaluators.Model(translate=translator.translate_texts(params)), step


def _classifier(workdir: str) -> tuple[evaluators.Model, int]:
  from paraflax.recipes import ref_classifier  # pylint: disable=g-import-not-at-top
  return ref_classifier.eval_model(workdir)


# recipe -> workdir -> (what the trained model can do, checkpoint step)
MODELS: dict[str, Callable[[str], tuple[evaluators.Model, int]]] = {
    "paraphrase": _embedder, "bilingual": _embedder, "nmt": _translator,
    "ref_classifier": _classifier}


def _claim(path: str) -> None:
  """Stops before any work unless `path` can take the reports: a new file
  or an earlier evaluation's output, never another file."""
  files.check_output(path)
  if not os.path.exists(path):
    return
  try:
    with open(path, encoding="utf-8") as f:
      ours = "checkpoint_step" in json.load(f)
  except (OSError, ValueError, TypeError):
    ours = False
  if not ours:
    raise errors.ConfigError(
        f"{path} exists and is not the output of an evaluation; write the "
        "reports to another --output.")


def _write(path: str, step: int, reports: dict[str, evaluators.Report],
           decode: Sequence[str]) -> None:
  details = {name: r.details for name, r in reports.items()}
  settings = {"decode": list(decode)} if decode else {}
  files.write_text_atomic(path, json.dumps(
      {"checkpoint_step": step, **settings, **details}, indent=2) + "\n")


def evaluate(workdir: str, only: Sequence[str] | None = None,
             decode: Sequence[str] | None = None, output: str | None = None
             ) -> dict[str, evaluators.Report]:
  """Runs `config.evals` (or those named in `only`) on the workdir's best
  checkpoint, prints their tables and writes them to `output` (default
  `<workdir>/evals.json`). An NMT's `decode` settings (`KEY=VALUE`) change
  its decoding for this evaluation only; the output records them."""
  config = workdir_lib.read_config(workdir)
  output = output or os.path.join(workdir, EVALS_FILE)
  _claim(output)
  decode = decode or ()
  if decode and config.recipe != "nmt":
    raise errors.ConfigError(
        f"--decode: {workdir} holds a {config.recipe!r} model; only an NMT "
        "decodes.")
  evals = config.get("evals") or {}
  load = MODELS[config.recipe]
  model, step = load(workdir, decode) if decode else load(workdir)
  reports = evaluators.run(evals, model, only,
                           dev=config.get("data", {}).get("dev", ""))
  for name, report in reports.items():
    print(f"== {name} (checkpoint step {step} of {workdir})\n{report.table}")
  _write(output, step, reports, decode)
  return reports


def eval_sts(workdir: str) -> dict:
  """`paraflax eval-sts`: the whole STS table of a paraphrase workdir,
  printed and written to `<workdir>/sts.json`."""
  workdir_lib.load_config(workdir, "paraphrase")
  model, step = _embedder(workdir)
  report = evaluators.sts(model)
  print(f"STS, checkpoint step {step} of {workdir}\n{report.table}")
  result = dict(report.details, checkpoint_step=step)
  files.write_text_atomic(os.path.join(workdir, STS_FILE),
                          json.dumps(result, indent=2) + "\n")
  return result
