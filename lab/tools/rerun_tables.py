"""lab/README.md's table of reruns: each collected run that `lab/run.py`
reran (tools/rerun.py), from its records lab/results/reruns/TABLE/
RUN.HARDWARE.json (kept) and RUN.HARDWARE.compared.json: where the kept
file was made, where and at which commit it ran again, and how many of
its values came back."""
from __future__ import annotations

import glob
import json
import os

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


def _time(record: dict) -> str:
  """The run's own time (its command's, which may write several runs;
  what was left after the runs before it in the clone whose steps it
  found taken), and its needs' where it had any."""
  own = quoted.duration(record["span"]["wall_s"])
  after = record.get("after") or []
  family = [a for a in record["command"].split() if a.startswith("runs/")]
  if len(family) - len(after) > 1:  # the runs of one command (rerun.py)
    own += f", one command for {len(family) - len(after)} runs"
  if after:
    own += f", after the steps of {', '.join(after)} in its clone"
  needs = record.get("needs") or []
  if not needs:
    return own
  spent = quoted.duration(sum(n["span"]["wall_s"] for n in needs))
  return f"{own}, after its needs' {spent}"


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
        _time(r),
        f"{r['equal']:,} of {r['values']:,}", _largest(r),
        _kept(r)))
  return markdown_table.table(
      ["kept run", "kept on", "rerun on (fresh clone, cold caches)",
       "rerun's time", "values equal", "largest difference",
       "rerun kept"], rows)


TABLES = (reruns,)
