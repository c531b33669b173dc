"""lab/README.md's table of reruns: each collected run that `lab/run.py`
reran (tools/rerun.py), from its records lab/results/reruns/TABLE/
RUN.HARDWARE.json (kept) and RUN.HARDWARE.compared.json: where the kept
file was made, where and at which commit it ran again, and how many of
its values came back."""
from __future__ import annotations

import functools
import glob
import json
import os
from collections.abc import Callable

import markdown_table
import quoted
import run_results


def _largest(record: dict) -> str:
  largest = record["largest_difference"]
  if largest is None:
    return "none" if not record["differences"] else "not a number"
  return f"{largest['by']:.2g} (`{largest['path']}`)"


def _cpu_id(record: dict) -> str:
  """ (family, model, stepping), where the record holds it."""
  return f" ({record['cpu_id']})" if record.get("cpu_id") else ""


# A clone, the comparisons and `mkdir -p` steps take seconds and compile
# nothing: less than this before a run leaves its caches as cold.
SETTLED_S = 10.0


def _needs_s(record: dict) -> float:
  return sum(n["span"]["wall_s"] for n in record.get("needs") or [])


def earlier_s(record: dict) -> float:
  """The wall seconds the steps of the run's clone took before its command,
  other than its needs': the record's `earlier_s`, or for a record without
  it its whole run (`run`, from lab/run.py's start) less its span and
  needs'."""
  if "earlier_s" in record:
    return record["earlier_s"]
  return max(0.0, record["run"]["wall_s"] - record["span"]["wall_s"]
             - _needs_s(record))


def time_text(record: dict) -> str:
  """A rerun's time as its kept sidecar and the table state it: its
  command's span (which may write several runs), and the clone it ran in:
  cold caches when it began, or the steps before it there (the runs whose
  steps it found done, `after`; other runs'; its needs) that filled them."""
  span = record["span"]
  text = (f"{quoted.duration(span['wall_s'])} "
          f"({quoted.duration(span['cpu_s'])} of CPU)")
  if span.get("peak_rss_mib"):
    text += f", peak {span['peak_rss_mib']:,} MiB"
  before, needs = earlier_s(record), record.get("needs") or []
  warm = before + _needs_s(record) >= SETTLED_S
  text += (", fresh clone, caches warm from the steps before it" if warm
           else ", fresh clone, cold caches")
  after = record.get("after") or []
  family = [a for a in record["command"].split() if a.startswith("runs/")]
  if len(family) - len(after) > 1:  # the runs of one command (rerun.py)
    text += f", one command that wrote {len(family) - len(after)} kept files"
  if after:
    text += (f", in one clone after {', '.join(after)}, whose steps it "
             "found done")
  elif before >= SETTLED_S:
    text += (f", in one clone after {quoted.duration(before)} of other runs' "
             "steps")
  if needs:
    text += (", after its needs (" + ", ".join(n["need"] for n in needs)
             + f": {quoted.duration(_needs_s(record))})")
  return text


def _kept(record: dict) -> str:
  """Whether the rerun was kept, and whether with a command of its own in
  place of the recorded one (lab/run.py --commands)."""
  if not record["kept_now"]:
    return "no"
  return "yes, its new command" if record.get("replaced") else "yes"


def reruns() -> list[str]:
  rows = []
  for path in sorted(glob.glob(os.path.join(run_results.RERUNS, "*",
                                            "*.json"))):
    with open(path, encoding="utf-8") as f:
      r = json.load(f)
    rows.append((
        f"`{r['rerun_of']}`", r["kept"]["hardware"] + (
            f", at {r['kept']['commit'][:7]}" if r["kept"].get("commit")
            else ""),
        f"{r['machine']}{_cpu_id(r)}, at {r['commit'][:7]}",
        time_text(r),
        f"{r['equal']:,} of {r['values']:,}", _largest(r),
        _kept(r)))
  return markdown_table.table(
      ["kept run", "kept on", "rerun on",
       "rerun's time", "values equal", "largest difference",
       "rerun kept"], rows)


# Records the docs quote as one figure, by the name of the value: the
# fr-en Avg rows of docs/filtering.md, all rerun on one Intel Xeon.
FAMILIES = {"filter_tables/fr-avg.intel-xeon-2core":
            "filter_tables/fr-*-avg-*.intel-xeon-2core"}


def pearson_gap(record: str) -> str:
  """The largest difference between a kept Pearson coefficient and its
  rerun's, in rerun record `record` (TABLE/RUN.HARDWARE[.compared], or a
  glob of such, as FAMILIES gives): how far STS figures move from one
  run, or one CPU kind, to the other. "0" when none differs."""
  gaps = []
  for path in sorted(glob.glob(os.path.join(run_results.RERUNS,
                                            f"{record}.json"))):
    with open(path, encoding="utf-8") as f:
      gaps += [abs(d["now"] - d["kept"]) for d in json.load(f)["differences"]
               if d["path"].endswith("pearson")
               and all(isinstance(d[k], (int, float))
                       for k in ("kept", "now"))]
  return f"{max(gaps):.0e}" if gaps else "0"


def _values() -> dict[str, Callable[[], str]]:
  """`rerun.TABLE/RUN.HARDWARE[.compared].pearson_gap` for every record and
  every family of FAMILIES."""
  records = [os.path.relpath(p, run_results.RERUNS).removesuffix(".json")
             for p in glob.glob(os.path.join(run_results.RERUNS, "*",
                                             "*.json"))]
  return {f"rerun.{name}.pearson_gap": functools.partial(pearson_gap, record)
          for name, record in (*zip(records, records), *FAMILIES.items())}


VALUES = _values()
TABLES = (reruns,)
