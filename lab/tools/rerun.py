"""Reruns a collected run (lab/results/runs/TABLE/NAME.json) as a newcomer
would, and compares what it writes with the kept file, value by value.

    python lab/run.py runs/sts_encoders/avg.json [--keep]

The recorded commands run in a fresh clone of this checkout's commit, in
a scratch folder beside a link to the data folder, as
lab/benchmarks/newcomer.py lays it out: this venv's interpreter runs the
clone's code (PYTHONPATH), and paraflax's compilation cache starts empty.
What the run reads that its commands do not make (tools/run_needs.py)
is made first by its own commands, and a kept run's output among them is
compared with its kept file too.
Each command starts once the load of what ran before has settled
(tools/settle.py: 1-minute load under 0.5, at most 3 min), so that a run
timed after another in one family starts on idle cores as the first does.
The wall and CPU seconds, the 1-minute load (sampled every 10 s), the
commit and the machine are measured. Each rerun writes its record
(children.write_result: the command that reruns it, commit, machine,
load, seconds, versions; the kept file's commit, machine and time; how
many values are equal and every one that differs), which lab/README.md's
table of reruns renders: lab/results/reruns/TABLE/RUN.HARDWARE.json for a
rerun kept with --keep, which also collects the output in place of the
kept file (lab/tools/collect_result.py) with what was measured, and
RUN.HARDWARE.compared.json for a rerun only compared, so that checking a
kept file again never replaces the record of how it was made. Runs whose
recorded command is one and the same (a filter table's family: one
chained command writes its 9 files) rerun together run it once; each is then
compared, recorded and kept from its own output, the time being the one
command's.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

_TOOLS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(_TOOLS), "benchmarks"))
import children  # pylint: disable=wrong-import-position
import collect_result  # pylint: disable=wrong-import-position
import kept_compare  # pylint: disable=wrong-import-position
import newcomer  # pylint: disable=wrong-import-position
import quoted  # pylint: disable=wrong-import-position
import rerun_tables  # pylint: disable=wrong-import-position
import run_needs  # pylint: disable=wrong-import-position
import run_results  # pylint: disable=wrong-import-position
from settle import settle  # pylint: disable=wrong-import-position

# The CPU families sidecars name ("AMD EPYC, 2 cores"), from /proc/cpuinfo's
# model name; any other model is named in full.
_FAMILIES = (("AMD EPYC", "AMD EPYC"), ("Xeon", "Intel Xeon"))


def machine() -> str:
  """This machine as sidecars name it: "AMD EPYC, 2 cores"."""
  model = children._cpu_model()  # pylint: disable=protected-access
  name = next((n for part, n in _FAMILIES if part in model), model)
  return f"{name}, {len(os.sched_getaffinity(0))} cores"


def _env(scratch: str, clone: str) -> dict[str, str]:
  """This venv's tools on the clone's code, caches empty, the data beside."""
  env = {k: v for k, v in children.USER_ENV.items()
         if not k.startswith(("PYTHON", "PARAFLAX_"))}
  env.update(PYTHONPATH=clone, XDG_CACHE_HOME=os.path.join(scratch, "cache"),
             PARAFLAX_DATA_DIR=os.path.join(scratch, "shared", "data"),
             PATH=os.pathsep.join([os.path.dirname(sys.executable),
                                   env.get("PATH", "")]))
  return env


def rerun(name: str, command: str, needs: Sequence[tuple[str, str]] = (),
          keep: bool = False, keep_scratch: bool = False,
          records: str = run_results.RERUNS) -> int:
  """Reruns collected run `name` ("runs/TABLE/RUN.json") by `command`, its
  sidecar's without the note, after the (need, command) pairs `needs`
  (run_needs.chain), and writes its record under `records`; 0 when it
  writes the kept file's values exactly, 1 when it differs or fails, 2
  when it cannot start."""
  return rerun_all([(name, command, needs)], keep, keep_scratch, records)


Run = tuple[str, str, Sequence[tuple[str, str]]]


def rerun_all(runs: Sequence[Run], keep: bool = False,
              keep_scratch: bool = False,
              records: str = run_results.RERUNS,
              replaced: Mapping[str, Mapping[str, str]] | None = None
              ) -> int:
  """Reruns collected runs, each (name, command, needs) as `rerun` takes
  it, in one fresh clone: every need and every run once, in order, so
  that a family shares what it needs; a run that another needs runs as a
  run (compared, recorded, kept with --keep). `replaced` maps a run
  ("TABLE/RUN") whose command is not its recorded one to the "command"
  and "config" that --keep records in place of the sidecar's. 0 when
  every run writes its kept file's values exactly, 1 when one differs or
  a step fails (the steps after it do not run), 2 when they cannot
  start (two runs that clash in one clone: `_clash`). Runs that share
  one command run it once (`_rerun_one`)."""
  commit = children.commit()
  if commit.endswith("+changes"):
    print("rerun: commit the checkout first; the clone holds the commit, "
          "not the working tree", file=sys.stderr)
    return 2
  clash = _clash(runs, replaced or {})
  if clash:
    print(f"rerun: {clash}; rerun them apart, one clone each",
          file=sys.stderr)
    return 2
  targets = {run_needs.ref(name): (name, command, needs)
             for name, command, needs in runs}
  order: dict[str, str] = {}
  for name, command, needs in runs:
    for need, line in needs:
      order.setdefault(need, line)
    order.setdefault(run_needs.ref(name), command)
  writers, after = _families(runs), _after(runs)
  scratch = tempfile.mkdtemp(prefix="rerun.")
  worst = 0
  try:
    clone = newcomer.clone(scratch)
    env = _env(scratch, clone)
    done: dict[str, dict[str, Any]] = {}
    ran: dict[str, dict[str, Any]] = {}  # a command: its timing
    spent: dict[str, float] = {}  # a command run in the clone: its wall s
    earlier: dict[str, float] = {}  # a run's command: `_Run.earlier_s`
    for step, line in order.items():
      if step in targets:
        name, command, needs = targets[step]
        earlier.setdefault(command, sum(spent.values()) - sum(
            spent.get(order[need], 0.0) for need, _ in needs))
        entry, code = _rerun_one(
            _Run(name, command, writers[command],
                 (replaced or {}).get(step, {}),
                 after.get(command, []), round(earlier[command], 1)),
            [done[n] for n, _ in needs], clone, env, commit, keep, records,
            ran)
      else:
        entry, code = _need(step, line, clone, env)
      if entry is None:
        return 1
      spent.setdefault(line, entry["span"]["wall_s"])
      done[step] = entry
      worst = max(worst, code)
  finally:
    if keep_scratch:
      print(f"rerun: the clone stays in {scratch}", file=sys.stderr)
    else:
      shutil.rmtree(scratch, ignore_errors=True)
  return worst


Written = tuple[str, str, list[str], list[tuple[str, str]]]


def _in_clone(runs: Sequence[Run]) -> Iterator[Written]:
  """For each run of a command not run before it, in the clone's order,
  and each path of the clone it writes: its name, the path, the steps a
  clone of its own takes there (its needs' and its own), and the (step, writer)
  the shared clone has taken there once its command ran, a writer being
  a run's name or a need's command (run_needs.writes)."""
  history: list[tuple[str, str, str]] = []  # (path, step, writer) in order
  ran: set[str] = set()  # the needs and commands run so far
  for name, command, needs in runs:
    if command in ran:
      continue  # one command's runs share its output
    fresh: list[tuple[str, str]] = []  # (path, step) in a clone of its own
    for writer, line in [*_named(needs), (name, command)]:
      written = run_needs.writes(line)
      fresh += written
      if line not in ran:
        history += [(path, step, writer) for path, step in written]
      ran.add(line)
    for folder in sorted({path for path, _ in fresh}):
      yield (name, folder,
             [s for p, s in fresh if run_needs.overlap(p, folder)],
             [(s, w) for p, s, w in history if run_needs.overlap(p, folder)])


def _named(needs: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
  """(writer, command) of each need: a kept run by its name, another
  need by its command."""
  return [(f"runs/{need}.json" if run_needs.is_run(need) else line, line)
          for need, line in needs]


def _after(runs: Sequence[Run]) -> dict[str, list[str]]:
  """Each command of `runs`: the runs before it in the clone, other than
  its needs, that first took steps it finds taken (its time is then that
  of what was left)."""
  out: dict[str, list[str]] = {}
  own = {name: {name, *(w for w, _ in _named(needs))}
         for name, _, needs in runs}
  commands = {name: command for name, command, _ in runs}
  for name, _, steps, shared in _in_clone(runs):
    after = out.setdefault(commands[name], [])
    first: dict[str, str] = {}  # a step: the writer that took it first
    for step, writer in shared:
      first.setdefault(step, writer)
    for writer in (first[step] for step in steps):
      if (writer.startswith("runs/") and writer not in own[name]
          and writer not in after):
        after.append(writer)
  return out


def _clash(runs: Sequence[Run],
           replaced: Mapping[str, Mapping[str, str]]) -> str:
  """Why runs cannot share one clone: a path that a run would find
  otherwise than its own commands and needs leave it in a clone of its
  own (another run's steps there, run_needs.settled), or one command's
  output that two runs would read; "" when none. A run may repeat the
  paraflax steps a run before it took (the fr-en NMT training that
  nmt-fr-nolimit's need repeats after the fr filter tables): finished
  work is kept."""
  for name, folder, own, shared in _in_clone(runs):
    if run_needs.settled([s for s, _ in shared]) != run_needs.settled(own):
      other = next((r for _, r in shared if r != name), name)
      return f"{other} and {name} both make {folder}"
  for command, names in _families(runs).items():
    if len(names) == 1:
      continue
    readers: dict[str, str] = {}  # output: run
    for name in names:
      ref = run_needs.ref(name)
      about = {**run_results.load(ref).about, **replaced.get(ref, {})}
      output = kept_compare.output_of(about, command)
      if readers.setdefault(output, name) != name:
        return f"{readers[output]} and {name} both read {output}"
  return ""


def _families(runs: Sequence[Run]) -> dict[str, list[str]]:
  """Each command of `runs` and the runs it writes, in order."""
  family: dict[str, list[str]] = {}
  for name, command, _ in runs:
    family.setdefault(command, []).append(name)
  return family


class _Run(NamedTuple):
  """A run to rerun: its name, its command, the runs that command writes
  (itself among them), the command and config it is kept with in place
  of its sidecar's (empty: the sidecar's), the runs before it in the
  clone whose steps it finds taken (`_after`), and the wall seconds the
  clone's steps took before its command other than its needs' (what the
  compile cache held when it started, rerun_tables.time_text)."""
  name: str
  command: str
  family: list[str]
  replacement: Mapping[str, str]
  after: list[str]
  earlier_s: float


def _rerun_one(job: _Run, before: list[dict[str, Any]], clone: str,
               env: dict[str, str], commit: str, keep: bool, records: str,
               ran: dict[str, dict[str, Any]]
               ) -> tuple[dict[str, Any] | None, int]:
  """One run's commands in `clone` (once for the runs of one command: its
  timing in `ran`), compared with its kept file and recorded (and kept,
  with the command and config of its replacement where it has them); its
  entry as a need of a later run and its code, (None, 1) when the command
  fails."""
  name, command = job.name, job.command
  table, run = run_needs.ref(name).split("/")
  kept = run_results.load(f"{table}/{run}")
  about = {**kept.about, **job.replacement}
  output = kept_compare.output_of(about, command)
  if command in ran:
    print(f"rerun: {name}: written by the command that wrote "
          f"{job.family[0]}", file=sys.stderr)
  else:
    print(f"rerun: {command}\n  in {clone} ({commit[:12]})", file=sys.stderr)
    settle()
    ran[command] = newcomer.timed(command, clone, env)
  timing = ran[command]
  if timing["exit"]:
    print(f"rerun: the command failed (exit {timing['exit']})",
          file=sys.stderr)
    return None, 1
  comparison = kept_compare.compared_file(os.path.join(clone, output),
                                          kept.data)
  report(name, comparison, timing)
  code = 1 if comparison["differences"] else 0
  record = _record(job, kept.about, comparison, timing, before, keep)
  if keep:
    try:
      _collect(os.path.join(clone, output), table, run, about, record,
               commit)
      record["kept_now"] = True
    except ValueError as e:  # collect_result's refusal, e.g. a local path
      print(f"rerun: not kept: {e}", file=sys.stderr)
      code = 1
  children.write_result(os.path.join(
      records, table, record_name(run, record["kept_now"])), record)
  return {"need": f"{table}/{run}", "span": timing,
          "values": comparison["values"], "equal": comparison["equal"]}, code


def _need(need: str, command: str, clone: str, env: dict[str, str]
          ) -> tuple[dict[str, Any] | None, int]:
  """Runs a need's command in `clone`; a kept run's output is compared
  with its kept file too. Its span and counts and 0; (None, 1) when it
  fails."""
  print(f"rerun: first {need}: {command}", file=sys.stderr)
  settle()
  timing = newcomer.timed(command, clone, env)
  if timing["exit"]:
    print(f"rerun: {need} failed (exit {timing['exit']})", file=sys.stderr)
    return None, 1
  entry = {"need": need, "span": timing}
  if match := kept_compare.kept_match(need, command, clone):
    entry.update(values=match["values"], equal=match["equal"])
    print(f"  {need}: {match['equal']} of {match['values']} kept values "
          f"equal; {quoted.duration(timing['wall_s'])}")
  return entry, 0


def report(name: str, comparison: dict[str, Any], timing: dict[str, Any],
           shown: int = 20) -> None:
  """The comparison and the measured span, on stdout."""
  print(f"{name}: {comparison['equal']} of {comparison['values']} kept "
        f"values equal; {quoted.duration(timing['wall_s'])} "
        f"({quoted.duration(timing['cpu_s'])} of CPU, peak "
        f"{timing['peak_rss_mib']:,} MiB) on {machine()}, "
        f"1-minute load {timing['load_mean']} (max {timing['load_max']})")
  largest, diff = comparison["largest_difference"], comparison["differences"]
  if largest:
    print(f"  largest numeric difference: {largest['by']:.3g} "
          f"({largest['path']})")
  for d in diff[:shown]:
    print(f"  {d['path']}: kept {d['kept']!r}, now {d['now']!r}")
  if len(diff) > shown:
    print(f"  ... and {len(diff) - shown} more")


def _record(job: _Run, about: dict[str, Any], comparison: dict[str, Any],
            timing: dict[str, Any], needs: list[dict[str, Any]],
            keep: bool) -> dict[str, Any]:
  """The rerun's result, not yet kept (`kept_now`): its command names every
  run of the one command (the span is that command's) after the runs
  whose steps it found taken in the clone (`after`), `keep` whether
  --keep was asked; `earlier_s` what ran in the clone before it, and
  `replaced` the command and config it ran in place of the kept file's,
  if any. Written to lab/results/reruns/TABLE/`record_name`."""
  head = children.run_facts(os.path.join(run_results.ROOT, "lab", "run.py"),
                            [*job.after, *job.family,
                             *(["--keep"] if keep else [])])
  return {
      **head, "rerun_of": job.name, "machine": machine(),
      "cpu_id": children.cpu_id(), "span": timing, "needs": needs,
      "kept": {k: about.get(k) for k in ("commit", "hardware", "time",
                                         "sha256")},
      "kept_now": False, "after": job.after, "earlier_s": job.earlier_s,
      **({"replaced": dict(job.replacement)} if job.replacement else {}),
      **comparison}


def record_name(run: str, kept: bool) -> str:
  """The file name of run RUN's rerun record on this hardware: a kept
  rerun's record names how its kept file was made (the sha256 of the file
  it replaced among it), so a rerun only compared writes beside it."""
  return f"{run}.{children.hardware()}{'' if kept else '.compared'}.json"


def _collect(path: str, table: str, run: str, about: dict[str, Any],
             record: dict[str, Any], commit: str) -> None:
  """Keeps `path` as TABLE/RUN with the time and load `record` measured."""
  collect_result.collect(argparse.Namespace(
      file=path, table=table, name=run,
      command=about["command"], config=about["config"], hardware=machine(),
      time=rerun_tables.time_text(record), overwrite=True, commit=commit,
      cpu_id=children.cpu_id(),
      load={k: record["span"][k] for k in ("load_at_start", "load_mean",
                                           "load_max")}))
  print(f"kept lab/results/runs/{table}/{run}.json; now run "
        "python lab/tools/render_tables.py")
