"""An output compared with its kept file, value by value: where a kept
run's command writes its output, every leaf of two JSON files matched
row by row, and how many of the kept values a new output repeats.
`tools/rerun.py` records these for a rerun and for its needs, and
`lab/run.py` for a benchmark's needs; this module starts no process and
loads no jax.
"""
from __future__ import annotations

import json
import os
import shlex
import sys
from typing import Any

import run_needs
import run_results


def output_of(about: dict[str, Any], command: str) -> str:
  """Where `command` (the sidecar's, without its note) writes the kept
  file, relative to the repository root: the sidecar's `output`, else the
  folder or file its last command of the file's kind names by --output
  or --json (else --workdir)."""
  if about.get("output"):
    return about["output"]
  kind = run_results.KINDS[about["kind"]]
  words = kind.command.split()[:2]  # "paraflax eval", of "... --decode" too
  for step in reversed(command.split("&&")):
    argv = shlex.split(step)
    if argv[:2] != words:
      continue
    for flag in ("--output", "--json", "--workdir"):
      if flag in argv[:-1]:
        path = argv[argv.index(flag) + 1] + kind.suffix
        return path if path.endswith(".json") else os.path.join(
            path, kind.folder, kind.file)
  raise ValueError(f"no `{kind.command}` of {command!r} names its output "
                   "(--output, --json or --workdir)")


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
  """Every leaf of JSON `data` under its path ("gran/sts/STSb.test"); an
  empty list or dict is a leaf."""
  if isinstance(data, dict) and data:
    items = data.items()
  elif isinstance(data, list) and data:
    items = enumerate(data)
  else:
    return {prefix: data}
  out: dict[str, Any] = {}
  for key, value in items:
    out.update(flatten(value, f"{prefix}/{key}" if prefix else str(key)))
  return out


_ABSENT = "(absent)"


def _differences(a: dict[str, Any], b: dict[str, Any]
                 ) -> list[tuple[str, Any, Any]]:
  """The leaves of flattened `a` and `b` that differ, as (path, a, b)."""
  return [(k, a.get(k, _ABSENT), b.get(k, _ABSENT)) for k in sorted({*a, *b})
          if a.get(k, _ABSENT) != b.get(k, _ABSENT)]


def _identity(rows: list[Any], others: list[Any]) -> list[str] | None:
  """The fewest leading fields (in the first kept row's order) whose text
  or integer values name every row of `rows` and of `others` once, and
  some row on both sides; None when no such fields exist."""
  if not rows or not all(isinstance(r, dict) for r in rows + others):
    return None
  fields: list[str] = []
  for field, value in rows[0].items():
    if isinstance(value, (float, dict, list)):
      break
    fields.append(field)
    labels = [_label(r, fields) for r in rows]
    other = [_label(r, fields) for r in others]
    if len(set(labels)) == len(rows) and len(set(other)) == len(others):
      return fields if set(labels) & set(other) else None
  return None


def _label(row: dict[str, Any], fields: list[str]) -> str:
  return ",".join(f"{f}={row.get(f, _ABSENT)}" for f in fields)


def align(kept: Any, new: Any) -> tuple[Any, Any]:
  """`kept` and `new` with each list of rows keyed by the rows' identity
  ("scorer=cosine,words=75000"), so a file written over two invocations
  compares row by row, not by index, and a row one side lacks is absent
  there."""
  if isinstance(kept, dict) and isinstance(new, dict):
    pairs = {k: align(v, new[k]) for k, v in kept.items() if k in new}
    return ({k: pairs[k][0] if k in pairs else v for k, v in kept.items()},
            {k: pairs[k][1] if k in pairs else v for k, v in new.items()})
  if isinstance(kept, list) and isinstance(new, list):
    fields = _identity(kept, new)
    if fields is None:
      return kept, new
    mine = {_label(r, fields): r for r in kept}
    theirs = {_label(r, fields): r for r in new}
    pairs = {k: align(r, theirs[k]) for k, r in mine.items() if k in theirs}
    return ({k: pairs[k][0] if k in pairs else r for k, r in mine.items()},
            {k: pairs[k][1] if k in pairs else r for k, r in theirs.items()})
  return kept, new


def differences(kept: Any, new: Any) -> list[tuple[str, Any, Any]]:
  """The leaves that differ, as (path, kept, new); a leaf that one side
  lacks reads "(absent)" there. Rows are matched as `align` says."""
  return _differences(*map(flatten, align(kept, new)))


def compare(kept: Any, new: Any) -> dict[str, Any]:
  """How many of the kept file's values `new` repeats, the largest numeric
  difference and every difference; rows are matched as `align` says."""
  a, b = map(flatten, align(kept, new))
  diff = _differences(a, b)
  numeric = [(abs(x - y), path) for path, x, y in diff
             if isinstance(x, (int, float)) and isinstance(y, (int, float))]
  largest = max(numeric, default=None)
  return {"values": len(a),
          "equal": sum(b.get(k, _ABSENT) == v for k, v in a.items()),
          "largest_difference": (
              {"path": largest[1], "by": largest[0]} if largest else None),
          "differences": [{"path": p, "kept": x, "now": y}
                          for p, x, y in diff]}


def compared_file(path: str, kept: Any) -> dict[str, Any]:
  """`compare` of the kept data with the JSON file at `path`."""
  with open(path, encoding="utf-8") as f:
    return compare(kept, json.load(f))


def kept_match(need: str, command: str, root: str) -> dict[str, Any]:
  """For a need that is a kept run: where `command` wrote its output
  (relative to `root`) and how many of the kept file's values it repeats
  (None when it cannot be read); {} for a need no run keeps."""
  if not run_needs.is_run(need):
    return {}
  kept = run_results.load(need)
  output = output_of(kept.about, command)
  try:
    counts = compared_file(os.path.join(root, output), kept.data)
  except (OSError, ValueError) as e:
    print(f"  {need}: {output} does not compare with the kept file ({e})",
          file=sys.stderr)
    return {"output": output, "values": len(flatten(kept.data)),
            "equal": None}
  return {"output": output, "values": counts["values"],
          "equal": counts["equal"]}
