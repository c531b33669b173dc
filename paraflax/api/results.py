"""What the commands wrote, read back: a sweep's table, a domain-selection
curve, a PPDB report, and the best paraphrases in a paraphrase table."""
from __future__ import annotations

import os
from typing import Any

from paraflax import errors


def _read_json(path: str, what: str, write: str, key: str) -> dict[str, Any]:
  """The dict in `path`, which a command writes (`write` says how) with a
  list under `key`; else a DataError naming the file and the fix."""
  import json  # pylint: disable=g-import-not-at-top
  try:
    with open(path, encoding="utf-8") as f:
      found = json.load(f)
  except FileNotFoundError:
    raise errors.DataError(f"{path} does not exist: {write}.") from None
  except json.JSONDecodeError as e:
    raise errors.DataError(f"{path} is not {what}: {e}") from None
  if not isinstance(found, dict) or not isinstance(found.get(key),
                                                   (list, dict)):
    raise errors.DataError(f"{path} is not {what}: it has no \"{key}\".")
  return found


def sweep_results(workdir: str | os.PathLike) -> dict[str, Any]:
  """The table `paraflax sweep --workdir W` wrote, W/results.json: a dict
  with "base" (the sweep's base config), "columns" (its extra metrics) and
  "points", one dict per point in sweep order: "name", "overrides"
  ("key=value" strings), "status" ("finished", "not finished" or
  "failed: ..."), and for a finished point "checkpoint_step", "select" (the
  dev metric that picked the checkpoint), "selected" (its value), "columns"
  ({metric: value or None}) and "metrics" (every metric of its evals).
  Raises DataError when W holds no table (run `paraflax sweep` or
  `paraflax sweep --report-only` first)."""
  from paraflax.inference import sweep  # pylint: disable=g-import-not-at-top
  workdir = os.fspath(workdir)
  return _read_json(
      os.path.join(workdir, sweep.RESULTS + ".json"), "a sweep table",
      f"run `paraflax sweep --config ... --workdir {workdir}` (or add "
      "--report-only once its points are finished) to write it", "points")


def domain_results(output: str | os.PathLike) -> dict[str, Any]:
  """The perplexity curve `paraflax eval-domain --output OUT` wrote,
  OUT/results.json: "select_dir", "test", "test_sentences" and "rows", one
  dict per selection method ("moore_lewis", "random", "ngram_overlap") and
  size: "method", "size", "perplexity", "perplexity_no_oov" (without the
  test words the LM never saw) and "oov_rate". Raises DataError when OUT
  holds no curve."""
  output = os.fspath(output)
  return _read_json(
      os.path.join(output, "results.json"), "an eval-domain curve",
      "run `paraflax eval-domain --select-dir SEL --test TEST --output "
      f"{output}` to write it", "rows")


def ppdb_results(output: str | os.PathLike) -> dict[str, Any]:
  """The report `paraflax eval-ppdb --output OUT` wrote, OUT.json (`OUT`
  or `OUT.json`): "table", "words" (the single words of the table that
  PPDB knows), "precision" ({ranking: {"p@1": .., "p@5": ..}}, a ranking
  being the table's "score" or one of its features such as "p" and
  "monods"), "coverage" ({text: {n: {"tokens": share of the n-gram
  occurrences, "types": of the distinct n-grams, "ngrams"}}}, n "1".."4"
  and "all"; only with --coverage) and "examples". Raises DataError when
  there is no report."""
  path = os.fspath(output)
  path = path if path.endswith(".json") else path + ".json"
  return _read_json(path, "an eval-ppdb report", "run `paraflax eval-ppdb "
                    f"--table TABLE --output {path[:-5]}` to write it",
                    "precision")


def paraphrases(table: str | os.PathLike, phrase: str, n: int = 5,
                by: str = "score") -> list[tuple[str, float]]:
  """The `n` best paraphrases (e2, value) of `phrase` in a paraphrase
  table of `paraflax pivot` or `paraflax monods`, highest first, ties by
  e2. `by`: the table's "score" (p(e2|e1) in a pivot table, the
  combination in a reranked one) or one of its features ("p", "monods").
  The phrase is looked up as the tables write it (lowercased, tokenised);
  a phrase the table lacks has none. A plain table is searched by
  bisection, so a word is found at once in a table of gigabytes."""
  from paraflax.data import words  # pylint: disable=g-import-not-at-top
  from paraflax.domain import table as table_lib  # pylint: disable=g-import-not-at-top
  found = table_lib.entries_of(table, " ".join(words.tokenize(phrase)))
  if found and by != "score" and any(by not in e.features for e in found):
    raise errors.ConfigError(
        f"by={by!r}: {os.fspath(table)} has the features "
        f"{', '.join(sorted(found[0].features)) or 'none'}; use one of them "
        "or \"score\".")
  value = (lambda e: e.score) if by == "score" else (
      lambda e: e.features[by])
  ranked = sorted(found, key=lambda e: (-value(e), e.e2))
  return [(e.e2, value(e)) for e in ranked[:n]]
