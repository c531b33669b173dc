"""The runs behind the results tables: commands' own output files, kept
verbatim under lab/results/runs/<table>/<name>.json, each with a sidecar
<name>.about.json saying how it was made:

    {"kind": "eval-sts", "command": "paraflax ...", "config": "...",
     "hardware": "AMD EPYC, 2 cores", "time": "...", "sha256": "..."}

`lab/tools/collect_result.py` copies a file in and writes its sidecar; the
renderers of `lab/tools/run_tables.py` compute their rows from these files.
A kind names a command's output by its file name and the keys it always
writes, so that a hand-written table cannot pass for one.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNS = os.path.join(ROOT, "lab", "results", "runs")
# Each rerun's record (tools/rerun.py): RERUNS/<table>/<name>.<hardware>.json
# when it was kept, <name>.<hardware>.compared.json when only compared.
RERUNS = os.path.join(ROOT, "lab", "results", "reruns")
ABOUT = ".about.json"


@dataclasses.dataclass(frozen=True)
class Kind:
  command: str        # the command that writes the file
  file: str           # the file's name in its output folder ("": --output)
  keys: frozenset     # top-level keys the command always writes
  suffix: str = ""    # what the command appends to its --output's name
  folder: str = ""    # the subfolder of its --workdir the file lies in


KINDS: dict[str, Kind] = {
    "pipeline-report": Kind("paraflax pipeline", "report.json", frozenset(
        {"preset", "nmt", "words", "gran", "bilingual", "backtranslate",
         "score", "sts", "mining"}), folder="report"),
    "eval-sts": Kind("paraflax eval-sts", "sts.json", frozenset(
        {"datasets", "groups", "semeval_2012_2015", "checkpoint_step"})),
    "eval": Kind("paraflax eval", "evals.json",
                 frozenset({"checkpoint_step"})),
    "eval-decode": Kind("paraflax eval --decode", "",
                        frozenset({"checkpoint_step", "decode"})),
    "sweep": Kind("paraflax sweep", "results.json",
                  frozenset({"base", "columns", "points"})),
    "eval-domain": Kind("paraflax eval-domain", "results.json",
                        frozenset({"select_dir", "test", "test_sentences",
                                   "rows"})),
    "mining-eval": Kind("paraflax mining-eval", "", frozenset(
        {"k", "dev", "test", "embeddings", "rows"})),
    "eval-reconstruction": Kind("paraflax eval-reconstruction", "", frozenset(
        {"data", "lines", "distinct", "gold", "embed_seconds", "rows"})),
    "eval-filtering": Kind("paraflax eval-filtering", "eval_filtering.json",
                           frozenset({"config", "overrides", "seed", "rows"})),
    "eval-ppdb": Kind("paraflax eval-ppdb", "", frozenset(
        {"table", "table_e1", "words", "precision"}), ".json"),
    "pivot": Kind("paraflax pivot", "", frozenset(
        {"languages", "lines", "e1", "english_phrases"}), ".summary.json"),
    "monods": Kind("paraflax monods", "", frozenset(
        {"events", "events_per_s", "phrases", "rerank_s"}), ".summary.json"),
    "pair-stats": Kind("paraflax pair-stats", "", frozenset(
        {"records", "pairs", "translation_words", "identical", "scores"})),
    "eval-bilingual": Kind(
        "paraflax eval-bilingual", "bilingual_eval.json",
        frozenset({"lang", "checkpoint_step", "similarities", "alignment",
                   "paracrawl"})),
    "analyze-backtranslations": Kind(
        "paraflax analyze-backtranslations", "",
        frozenset({"input", "pairs", "table9", "table10"})),
}


class NotAnOutput(ValueError):
  """A file that no command of KINDS wrote."""


def sha256(path: str) -> str:
  with open(path, "rb") as f:
    return hashlib.sha256(f.read()).hexdigest()


def kind_of(path: str) -> str:
  """The kind of output `path` is, or NotAnOutput naming what is wrong."""
  name = os.path.basename(path)
  try:
    with open(path, encoding="utf-8") as f:
      data = json.load(f)
  except (OSError, json.JSONDecodeError) as e:
    raise NotAnOutput(f"{path}: not a JSON file ({e})") from e
  found = [k for k, kind in KINDS.items() if name == (kind.file or name)
           and isinstance(data, dict) and kind.keys <= data.keys()]
  if not found:
    outputs = ", ".join(f"{k.file or '--output'} of `{k.command}`"
                        for k in KINDS.values())
    raise NotAnOutput(
        f"{path}: not a command's output; collect one of: {outputs}, "
        "unchanged from where the command wrote it")
  return found[0]


@dataclasses.dataclass(frozen=True)
class Run:
  name: str
  data: dict
  about: dict


def load(ref: str) -> Run:
  """`ref` is "<table>/<name>": the run's file and sidecar, checked to be
  the file the sidecar describes."""
  path = os.path.join(RUNS, ref + ".json")
  with open(os.path.join(RUNS, ref + ABOUT), encoding="utf-8") as f:
    about = json.load(f)
  if sha256(path) != about["sha256"]:
    raise ValueError(f"{os.path.relpath(path, ROOT)}: changed since it was "
                     "collected (sha256 differs from its .about.json); "
                     "collect the command's output again with "
                     "lab/tools/collect_result.py")
  with open(path, encoding="utf-8") as f:
    return Run(ref, json.load(f), about)
