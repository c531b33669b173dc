"""`paraflax score-paraphrases`: every record of a back-translation JSONL
with a `scores` object added, in one streaming pass.

Memory stays flat in the number of records: the input is read twice line
by line (first to check every record and fingerprint the file, so bad
input stops the run before it writes anything; then to score), and the
output is appended in blocks of `BLOCK` records, one write each. A run
killed anywhere and rerun with the same command resumes after the last
whole block (`files.finished_prefix`, as `paraflax backtranslate` does) and
ends with the bytes of an uninterrupted run; a run over another input or
other scorers refuses the output unless `--overwrite`
(`files.claim_output`).

Scorers that need a resource (`scores.OPTIONAL`: `--lm`) are built by
`_resourced` before the output is claimed, so a bad resource stops the run
before it writes; the resource's digest joins the settings, so a rerun
with another one (or without it) is refused like one over another input.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import sys
from collections.abc import Iterator, Mapping
from typing import NamedTuple

import tqdm

from paraflax import faults
from paraflax import files
from paraflax.data import readers
from paraflax.filtering import lm as lm_lib
from paraflax.filtering import scores

BLOCK = 1000  # records per append: the unit of progress and resumption
KEYS = ("reference", "translation", "cost")
_FIX = ("Score the output of `paraflax backtranslate`, whose records have "
        "reference, translation and cost.")


def _records(path: str) -> Iterator[dict]:
  return readers.iter_jsonl(path, keys=KEYS, fix=_FIX)


def _survey(path: str) -> tuple[str, int]:
  """The sha256 of the input's records and their number; stops at the
  first bad line."""
  digest, count = hashlib.sha256(), 0
  for record in _records(path):
    digest.update(json.dumps(record, sort_keys=True).encode() + b"\n")
    count += 1
  return digest.hexdigest(), count


class Resourced(NamedTuple):
  scorer: scores.Scorer
  resource: str  # digest of what it was built from (an LM file, ...)


def _resourced(lm: str | None) -> dict[str, Resourced]:
  """The scorers of `scores.OPTIONAL` this run's flags ask for."""
  built = {}
  if lm is not None:
    built["lm_ppl"] = Resourced(lm_lib.perplexity_scorer(lm),
                                lm_lib.sha256(lm))
  return built


def _settings(digest: str, resourced: Mapping[str, Resourced]) -> dict:
  settings = {"input": digest, "scores": [*scores.SCORERS, *resourced]}
  if resourced:  # without: the settings of runs made before OPTIONAL was
    settings["resources"] = {k: v.resource for k, v in resourced.items()}
  return settings


def _line(record: dict, extra: Mapping[str, scores.Scorer]) -> str:
  """The record as it came, plus (or with a fresh) `scores`."""
  return json.dumps({**record, "scores": scores.score(record, extra)},
                    ensure_ascii=False) + "\n"


def score_file(input: str, output: str, overwrite: bool = False,
               lm: str | None = None) -> int:
  """Writes `output`: each record of `input` with its scores
  (`filtering.scores.SCORERS`, and `lm_ppl` under the KenLM model `lm`),
  in input order; returns the records written by this run."""
  files.check_output(output)
  digest, count = _survey(input)
  resourced = _resourced(lm)
  extra = {name: r.scorer for name, r in resourced.items()}
  files.claim_output(output, _settings(digest, resourced),
                     overwrite=overwrite)
  sizes = [min(BLOCK, count - start) for start in range(0, count, BLOCK)]
  # The input's digest is in the settings: the records cannot differ.
  done = files.finished_prefix(output, sizes, unit="block")
  start = sum(sizes[:done])
  progress = tqdm.tqdm(total=count, initial=start, unit="rec",
                       dynamic_ncols=True)
  records = itertools.islice(_records(input), start, None)
  with open(output, "a", encoding="utf-8") as f:
    for size in sizes[done:]:
      f.write("".join(_line(r, extra)
                      for r in itertools.islice(records, size)))
      f.flush()
      os.fsync(f.fileno())
      faults.moment("score_paraphrases.block")
      progress.update(size)
  progress.close()
  print(f"{count} records in {input}, {count - start} scored by this run "
        f"into {output} ({', '.join([*scores.SCORERS, *extra])})",
        file=sys.stderr)
  return count - start
