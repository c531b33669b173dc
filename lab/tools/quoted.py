"""A figure that prose quotes straight from one field of a result file.

A value marker whose name reads FILE:PATH:FORMAT renders one field:

    <!-- value: newcomer.tests.intel-xeon-2core.json:steps/2/wall_s:duration -->54 s<!-- /value -->

FILE is a result file under lab/results/ (a benchmark's JSON, or a
collected run's under runs/). PATH's segments, split on "/", are a dict
key, a list position, or KEY=VALUE: the list item whose KEY reads VALUE
(KEY=VALUE,KEY2=VALUE2: the item whose fields read all of them). A
position is refused where up to three fields that every item has name the
item (a rerun that adds or reorders items would move the quote to another
item); it stays where none do, as where the naming field holds a path,
which PATH cannot hold.
FORMAT is a Python format spec (".1f", ",", ",.0f") or one of FORMATS.
A figure that needs arithmetic over several fields has a named renderer
instead (render_tables.VALUES).
"""
from __future__ import annotations

import itertools
import json
import os
import re
from typing import Any, Callable

import markdown_table

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), "results")


def duration(seconds: float) -> str:
  """`seconds` as a person reads it: "41.9 s", "12 min 50 s", "1 h 12 min"."""
  if seconds < 10:
    return f"{seconds:.1f} s"
  m, s = divmod(round(seconds), 60)
  h, m = divmod(m, 60)
  if h:
    return f"{h} h {m} min"
  return f"{m} min {s} s" if m else f"{s} s"


FORMATS: dict[str, Callable[[Any], str]] = {
    "duration": duration,
    "mib": lambda b: f"{b / 2**20:,.0f}",  # bytes, in MiB
    "gib": lambda b: f"{b / 2**30:.1f}",  # bytes, in GiB
    "gb": lambda b: f"{b / 1e9:.1f}",  # bytes, in GB (10^9)
    "pct": lambda f: f"{100 * f:.1f}",  # a fraction, in per cent
    "inverse": lambda r: f"{1 / r:.2f}",  # ours / theirs as theirs / ours
    # A hardware name ("intel-xeon-2core") as the tables name its CPU.
    "machine": lambda name: markdown_table.CPU_KINDS.get(name, name),
    # A recorded hardware dict as the tables name its CPU and generation.
    "cpu": markdown_table.recorded_cpu_cell,
    "str": str,
}


def is_quote(name: str) -> bool:
  return name.count(":") == 2


# A field value that a KEY=VALUE segment can hold (no "/", ":", ",", "=").
_NAMING = re.compile(r"[\w.-]+")
# A field whose name ends in a unit measures: a rerun changes its value,
# so it names nothing even where every item's differs (a step's peak MiB).
_MEASURED = re.compile(r".*_(s|ms|mib|gib|bytes|hours)")


def _naming_fields(item: dict) -> dict[str, str]:
  return {key: str(value) for key, value in item.items()
          if isinstance(value, (str, int)) and not isinstance(value, bool)
          and _NAMING.fullmatch(str(value)) and not _MEASURED.fullmatch(key)}


def _selector(items: list, index: int) -> str | None:
  """The KEY=VALUE,... of up to three fields that names items[index]
  alone, or None. A naming field is one that every item has, with a value
  a segment can hold: a measurement that one item has and another lacks
  names nothing."""
  if not all(isinstance(item, dict) for item in items) or len(items) < 2:
    return None
  fields = [_naming_fields(item) for item in items]
  shared = sorted(set.intersection(*(set(f) for f in fields)))
  for width in (1, 2, 3):
    for keys in itertools.combinations(shared, width):
      mine = [fields[index][key] for key in keys]
      if sum([f[key] for key in keys] == mine for f in fields) == 1:
        return ",".join(f"{key}={value}" for key, value in zip(keys, mine))
  return None


def _step(node: Any, segment: str, where: str) -> Any:
  if isinstance(node, list):
    if "=" in segment:
      want = dict(part.split("=", 1) for part in segment.split(","))
      for item in node:
        if isinstance(item, dict) and all(
            str(item.get(key)) == value for key, value in want.items()):
          return item
      raise KeyError(f"{where}: no item with " + ", ".join(
          f"{key} = {value!r}" for key, value in want.items()))
    index = int(segment)
    selector = _selector(node, index)
    if selector:
      raise KeyError(f"{where}: item {index} is picked by position; write "
                     f"{selector!r}, which names it")
    return node[index]
  if segment not in node:
    raise KeyError(f"{where}: no key {segment!r} (has {sorted(node)[:12]})")
  return node[segment]


def field(name: str) -> Any:
  """The raw field that the quote `name` (FILE:PATH:FORMAT) points at."""
  rel, path, _ = name.split(":")
  with open(os.path.join(RESULTS, rel), encoding="utf-8") as f:
    node = json.load(f)
  for segment in path.split("/"):
    node = _step(node, segment, f"lab/results/{rel}")
  return node


def render(name: str) -> str:
  """The quote `name` rendered by its FORMAT."""
  spec = name.rsplit(":", 1)[1]
  value = field(name)
  return FORMATS[spec](value) if spec in FORMATS else format(value, spec)
