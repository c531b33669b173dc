"""`paraflax score-paraphrases`: every record of a back-translation JSONL
with a `scores` object added, in one streaming pass.

Memory stays flat in the number of records: the input is read twice line
by line (first to check every record and fingerprint the file, so bad
input stops the run before it writes anything; then to score), and the
output is appended in blocks of `BLOCK` records, one write each. A run
killed anywhere and rerun with the same command resumes after the last
whole block (`files.finished_prefix`, as `paraflax backtranslate` does) and
ends with the bytes of an uninterrupted run; a run over another input,
other scorers or another resource of a block scorer (another classifier
checkpoint) refuses the output unless `--overwrite` (`files.claim_output`).
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence

import tqdm

from paraflax import faults
from paraflax import files
from paraflax.data import jsonl
from paraflax.data import shards
from paraflax.filtering import scores

BLOCK = 1000  # records per append: the unit of progress and resumption
KEYS = ("reference", "translation", "cost")
FIX = ("Score the output of `paraflax backtranslate`, whose records have "
        "reference, translation and cost.")


def _records(path: str) -> Iterator[dict]:
  return shards.iter_jsonl(path, keys=KEYS, fix=FIX)


def survey(path: str) -> tuple[str, int, list[int]]:
  """The records' digest and number, and the sizes of the blocks: `BLOCK`
  records at a time, a shard of a sharded input (`shards.resolve`) ending
  its last block."""
  counts: list[int] = []

  def records() -> Iterator[dict]:
    for part in shards.resolve(path):
      counts.append(0)
      for record in jsonl.iter_jsonl(part, keys=KEYS, fix=FIX):
        counts[-1] += 1
        yield record

  digest, count = digest_of(records())
  return digest, count, [min(BLOCK, n - start) for n in counts
                         for start in range(0, n, BLOCK)]


def digest_of(records: Iterable[dict]) -> tuple[str, int]:
  """The sha256 of the records (what the output's settings name as its
  input) and their number."""
  digest, count = hashlib.sha256(), 0
  for record in records:
    digest.update(json.dumps(record, sort_keys=True).encode() + b"\n")
    count += 1
  return digest.hexdigest(), count


def lines_of(records: list[dict],
           block_scorers: Sequence[scores.BlockScorer]) -> str:
  """The records as they came, each plus (or with a fresh) `scores`."""
  pairs = [scores.pair_of(r) for r in records]
  extra = {b.name: b.score(pairs) for b in block_scorers}
  return "".join(json.dumps({**record, "scores": {
      **scores.score_pair(pair),
      **{name: float(values[i]) for name, values in extra.items()}}},
                            ensure_ascii=False, allow_nan=False) + "\n"
                 for i, (record, pair) in enumerate(zip(records, pairs)))


def settings_of(digest: str, block_scorers: Sequence[scores.BlockScorer]
              ) -> dict:
  names = [b.name for b in block_scorers]
  unknown = sorted(set(names) - set(scores.OPTIONAL))
  if unknown or len(set(names)) < len(names):
    raise ValueError(f"block scorers {names}: each once, of "
                     f"{scores.OPTIONAL}")
  settings = {"input": digest, "scores": list(scores.SCORERS) + names}
  if block_scorers:  # without, the settings of files scored before them
    settings["resources"] = {b.name: b.identity for b in block_scorers}
  return settings


def score_file(input: str, output: str, overwrite: bool = False,
               block_scorers: Sequence[scores.BlockScorer] = ()) -> int:
  """Writes `output`: each record of `input` (a file, or the shards of a
  sharded output: a glob, a folder) with its scores
  (`filtering.scores.SCORERS`, and those of `block_scorers`), in input
  order; returns the records written by this run."""
  files.check_output(output)
  digest, count, sizes = survey(input)  # stops at a bad line
  settings = settings_of(digest, block_scorers)
  files.claim_output(output, settings, overwrite=overwrite)
  # The input's digest is in the settings: the records cannot differ.
  done = files.finished_prefix(output, sizes, unit="block")
  start = sum(sizes[:done])
  progress = tqdm.tqdm(total=count, initial=start, unit="rec",
                       dynamic_ncols=True)
  records = itertools.islice(_records(input), start, None)
  with open(output, "a", encoding="utf-8") as f:
    for size in sizes[done:]:
      f.write(lines_of(list(itertools.islice(records, size)), block_scorers))
      f.flush()
      os.fsync(f.fileno())
      faults.moment("score_paraphrases.block")
      progress.update(size)
  progress.close()
  print(f"{count} records in {input}, {count - start} scored by this run "
        f"into {output} ({', '.join(settings['scores'])})", file=sys.stderr)
  return count - start
