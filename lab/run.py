"""Lists the result files of lab/results/ with the command behind each, and
reruns one of them from the repository root.

    python lab/run.py --list                      # NAME, writer, command
    python lab/run.py NAME [--print]              # rerun (or show) NAME's command
    python lab/run.py NAME --as NEW               # a repeat beside NAME, in NEW
    python lab/run.py runs/TABLE/RUN.json [--keep]  # rerun a collected run
    python lab/run.py runs/T/A.json runs/T/B.json   # several, in one clone
    python lab/run.py A.json B.json               # benchmarks in turn

The command is the one lab/results/manifest.json records for NAME, as a
checkout of today lays it out (benchmarks under lab/), writing NAME again
(its `--output` pointed at NAME). A placeholder of a path of the machine
that ran it (`WORK`, `NMT_WORKDIR`, `PEER_PYTHON`, as children.portable
writes them) is read from the environment variable of that name, one
named like a variable every shell sets (`PATH`, a positional path's) from
NAME_ARG (`PATH_ARG`), and `$PEERS` from the environment as the shell
would. A trailing parenthesised note ("(the PPDB words of gran-seed0)") is
printed, not run.
A collected run (results/runs/) was made by paraflax commands and kept by
tools/collect_result.py: tools/rerun.py runs its commands in a fresh clone
whose caches start empty, after those of what it needs
(tools/run_needs.py), and compares their output with the kept file value
by value (exit 1 when one differs); --keep keeps the new output in its
place, with the measured time, load, commit and machine. Several
collected runs rerun in one clone, each need and each run once (a family
that shares what it needs), and runs of one and the same command run it
once.
A benchmark that reads a paraflax run's output (a trained workdir, a
paraphrase table) first runs the commands that make it, from the
repository root (tools/run_needs.py's BENCHMARK_NEEDS; paraflax keeps
finished work, so a trained workdir trains no further, though an
evaluation among the commands runs again), then waits for the load they,
or whatever ran before, leave to settle (1-minute load under 0.5, at
most 3 min: tools/settle.py) before the benchmark starts its clock. A
need that is a kept run has its output compared with the kept file value
by value; each need's command, time and count of equal values reach the
benchmark's file (`run.needs`, through PARAFLAX_LAB_NEEDS), so the file
says which state of its input it measured. Several benchmarks run in
turn, each need once, the load settling before each.
--print shows the commands, what they need first, and the line that
collects their output by hand. A collected run whose recorded command
fails at this commit reruns with the command a JSON file gives it,
{"runs/T/N.json": {"command": ..., "config": ...}} (--commands FILE);
--keep records that command and config in its sidecar, and a need named
there runs with it too.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time

_LAB = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(_LAB)
sys.path.insert(0, os.path.join(_LAB, "tools"))
import manifest  # pylint: disable=wrong-import-position
import run_needs  # pylint: disable=wrong-import-position
import run_results  # pylint: disable=wrong-import-position
from settle import settle  # pylint: disable=wrong-import-position

# Where the scripts and results lay before lab/ held them.
_MOVED = ((re.compile(r"(?<![\w/.-])(?:benchmarks|docs)/results/"),
           "lab/results/"),
          (re.compile(r"(?<![\w/.-])(benchmarks|tools|experiments)/"),
           r"lab/\1/"))
_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*$")
_NOTE = re.compile(r"\s+\(([^()]*)\)$")


def note_of(text: str) -> tuple[str, str]:
  """A recorded command split into the command and its trailing note."""
  m = _NOTE.search(text)
  return (text[:m.start()], m.group(1)) if m else (text, "")


def command_of(name: str, entries: dict[str, dict]) -> list[str]:
  """NAME's command as argv for today's layout, its output NAME; raises
  KeyError for an unlisted NAME, ValueError for one without a command."""
  entry = entries[name]
  if not entry.get("command"):
    raise ValueError(
        f"{name} holds no command (kept before the record had a writer); "
        "lab/README.md lists how such files were made")
  text, _ = note_of(entry["command"])
  if "(" in text:
    raise ValueError(f"{name}'s command is told, not given as argv: {text}")
  for pattern, repl in _MOVED:
    text = pattern.sub(repl, text)
  argv = shlex.split(text)
  # A collected run's --output is its command's own output folder, which
  # collect_result.py then copies: only a benchmark's names NAME.
  if "--output" in argv[:-1] and not name.startswith("runs/"):
    argv[argv.index("--output") + 1] = os.path.join("lab", "results", name)
  return argv


def needs_of(name: str, entries: dict[str, dict],
             replaced: dict[str, dict] | None = None
             ) -> list[tuple[str, str]]:
  """(need, command) for what NAME, a collected run ("runs/TABLE/RUN.json")
  or a benchmark's file, reads that its commands do not make, in the
  order they run; a need in `replaced` (NAME -> {"command": ...}) runs its
  command there."""
  return run_needs.chain(run_needs.ref(name), lambda need: _command(
      f"runs/{need}.json", entries, replaced or {}))


def _command(name: str, entries: dict[str, dict],
             replaced: dict[str, dict]) -> str:
  if name in replaced:
    return replaced[name]["command"]
  return shell_line(command_of(name, entries))


def _replaced(path: str | None, entries: dict[str, dict]
              ) -> dict[str, dict]:
  """--commands FILE: collected run -> {"command", "config"}; ValueError
  names what is not one."""
  if not path:
    return {}
  with open(path, encoding="utf-8") as f:
    replaced = json.load(f)
  for name, given in replaced.items():
    if not (name.startswith("runs/") and name in entries):
      raise ValueError(f"{path}: {name} is not a collected run "
                       "(python lab/run.py --list)")
    if set(given) != {"command", "config"}:
      raise ValueError(f"{path}: {name} gives {sorted(given)}, not "
                       "['command', 'config']")
  return replaced


def collect_line(name: str) -> str:
  """The collect_result.py line that keeps a rerun of collected run NAME
  ("runs/TABLE/RUN.json") in its place, from the sidecar beside it."""
  _, table, run = name.split("/")
  run = run.removesuffix(".json").removesuffix(".about")
  about = run_results.load(f"{table}/{run}").about
  return shell_line([
      "python", "lab/tools/collect_result.py", about.get("output", "OUTPUT"),
      "--table", table, "--name", run, "--command", about["command"],
      "--config", about["config"], "--hardware", "HARDWARE", "--time", "TIME",
      "--overwrite"])


def shell_line(argv: list[str]) -> str:
  """`argv` as a line to paste into a shell: every word quoted where it
  needs it, the `&&` that joins a collected run's commands left bare."""
  return " ".join(a if a == "&&" else shlex.quote(a) for a in argv)


# Variables every shell sets: a placeholder so named (children.portable
# writes PATH for a positional path) would silently take the shell's value.
_SHELL_SETS = frozenset({"PATH", "HOME", "PWD", "OLDPWD", "SHELL", "USER",
                         "LOGNAME", "TMPDIR", "LANG", "TERM", "HOSTNAME"})


def _variable(placeholder: str) -> str:
  """The environment variable that gives `placeholder` its path."""
  return f"{placeholder}_ARG" if placeholder in _SHELL_SETS else placeholder


def _resolved(argv: list[str]) -> list[str]:
  """Placeholders and $VARS from the environment; SystemExit naming the
  ones it lacks."""
  missing = [_variable(a) for a in argv if _PLACEHOLDER.match(a)]
  missing += re.findall(r"\$(\w+)", " ".join(argv))
  missing = [m for m in dict.fromkeys(missing) if m not in os.environ]
  if missing:
    raise SystemExit("run: set " + ", ".join(missing) + " (the paths of "
                     "this machine the command needs), e.g. "
                     f"{missing[0]}=/path python lab/run.py ...")
  return [os.environ[_variable(a)] if _PLACEHOLDER.match(a)
          else os.path.expandvars(a) for a in argv]


def _interpreter(argv: list[str]) -> list[str]:
  """The command with this venv's python in front of a script."""
  if argv[0].endswith("python") or argv[0].endswith("python3"):
    argv = argv[1:]
  if argv[0].endswith(".py"):
    return [sys.executable, *argv]
  if argv[0].endswith(".sh"):
    return ["bash", *argv]
  return argv


def main(argv: list[str] | None = None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("names", nargs="*", metavar="NAME",
                      help="a file of lab/results/; several collected runs "
                      "rerun in one clone")
  parser.add_argument("--list", action="store_true")
  parser.add_argument("--print", action="store_true",
                      help="show the command, run nothing")
  parser.add_argument("--as", dest="repeat", metavar="NEW",
                      help="a benchmark: its command writes lab/results/NEW, "
                      "a new file beside NAME (a repeat, for the spread "
                      "between runs)")
  parser.add_argument("--keep", action="store_true",
                      help="a collected run: keep the rerun's output in "
                      "place of the kept file")
  parser.add_argument("--keep-scratch", action="store_true",
                      help="a collected run: leave the clone it ran in")
  parser.add_argument("--commands", metavar="FILE",
                      help="JSON: collected run -> {command, config} that "
                      "replace its recorded ones (--keep records them)")
  args = parser.parse_args(argv)
  entries = manifest.load()
  try:
    args.replaced = _replaced(args.commands, entries)
  except ValueError as e:
    print(f"run: {e}", file=sys.stderr)
    return 2
  if args.list or not args.names:
    for name, e in sorted(entries.items()):
      print(f"{name}\t{e['written_by'] or 'kept'}\t{e['command'] or '-'}")
    return 0
  if args.repeat and (len(args.names) != 1 or args.replaced):
    print("run: --as NEW repeats one benchmark NAME", file=sys.stderr)
    return 2
  if (len(args.names) > 1 and not args.replaced and not args.print
      and all(n in entries and not n.startswith("runs/") for n in args.names)):
    try:
      return _benchmarks(args.names, entries)
    except ValueError as e:
      print(f"run: {e}", file=sys.stderr)
      return 2
  if len(args.names) > 1 or args.replaced:
    return _rerun_family(args, entries)
  args.name, = args.names
  try:
    command = command_of(args.name, entries)
    if args.repeat:
      command = repeat_of(args.name, args.repeat, command, entries)
  except KeyError:
    print(f"run: {args.name} is not in lab/results/manifest.json "
          "(python lab/run.py --list)", file=sys.stderr)
    return 2
  except ValueError as e:
    print(f"run: {e}", file=sys.stderr)
    return 2
  note = note_of(entries[args.name]["command"])[1]
  if note:
    print(f"note: {note}", file=sys.stderr)
  collected = args.name.startswith("runs/")
  needs = needs_of(args.name, entries)
  if args.print:
    for need, line in needs:
      print(_first(need, line))
    print(shell_line(command))
    if collected:
      print("then: " + collect_line(args.name))
    return 0
  if collected:
    import rerun  # pylint: disable=g-import-not-at-top
    return rerun.rerun(args.name, shell_line(command), needs, keep=args.keep,
                       keep_scratch=args.keep_scratch)
  return _benchmark(args.name, _resolved(command), needs)


def repeat_of(name: str, new: str, argv: list[str],
              entries: dict[str, dict]) -> list[str]:
  """Benchmark NAME's command `argv` writing lab/results/NEW instead;
  ValueError for a collected run and for a NEW the manifest lists (a
  repeat never replaces a kept file) or that is no file name of
  lab/results/."""
  if name.startswith("runs/") or not takes_output(argv):
    raise ValueError(f"--as: {name} is no benchmark file whose command "
                     "takes --output; a collected run reruns in place")
  if new in entries or os.sep in new or not new.endswith(".json"):
    raise ValueError(f"--as {new}: give a new .json name in lab/results/, "
                     "one the manifest does not list (python lab/run.py "
                     "--list)")
  if "--output" not in argv[:-1]:
    return [*argv, "--output", os.path.join("lab", "results", new)]
  argv = list(argv)
  argv[argv.index("--output") + 1] = os.path.join("lab", "results", new)
  return argv


def takes_output(argv: list[str]) -> bool:
  """Whether a benchmark's command names its output, or its script's
  --help offers --output (a file recorded before the script wrote its
  default output into the command)."""
  if "--output" in argv[:-1]:
    return True
  script = _interpreter(argv)
  if script[0] != sys.executable:
    return False
  helped = subprocess.run([*script[:2], "--help"], cwd=ROOT, check=False,
                          capture_output=True, text=True)
  return (helped.returncode == 0
          and re.search(r"--output(?![\w-])", helped.stdout) is not None)


def _first(need: str, line: str) -> str:
  """How a need that runs first is shown: by its run's name where it is a
  kept run's command."""
  return f"first ({need}): {line}" if need != line else f"first: {line}"


def _benchmark(name: str, argv: list[str], needs: list[tuple[str, str]],
               made: dict[str, dict] | None = None) -> int:
  """Runs benchmark NAME's `argv` from the repository root after the
  commands of what it needs (those not in `made`, a need's command -> its
  record, which this fills) and the load they, or whatever ran before,
  leave settling, on this checkout's code with this venv's tools on PATH,
  its needs' records in PARAFLAX_LAB_NEEDS; 1 when a need fails (the
  benchmark does not run)."""
  made = {} if made is None else made
  env = dict(os.environ, **{
      var: os.pathsep.join(filter(None, [first, os.environ.get(var)]))
      for var, first in (("PATH", os.path.dirname(sys.executable)),
                         ("PYTHONPATH", ROOT))})
  for need, line in needs:
    if line in made:
      continue
    print(f"run: {_first(need, line)}", file=sys.stderr)
    start = time.monotonic()
    if subprocess.run(["bash", "-c", line], cwd=ROOT, env=env,
                      check=False).returncode:
      print(f"run: {need} failed, so {name} did not run", file=sys.stderr)
      return 1
    made[line] = {"need": need, "command": line,
                  "wall_s": round(time.monotonic() - start, 1),
                  **_kept_match(need, line)}
  env[run_needs.RECORD_VARIABLE] = json.dumps(
      [made[line] for _, line in needs])
  settle()
  return subprocess.run(_interpreter(argv), cwd=ROOT, env=env,
                        check=False).returncode


def _kept_match(need: str, line: str) -> dict:
  """kept_compare.kept_match of a need run from the repository root,
  printed."""
  import kept_compare  # pylint: disable=g-import-not-at-top
  match = kept_compare.kept_match(need, line, ROOT)
  if match.get("equal") is not None:
    print(f"  {need}: {match['equal']} of {match['values']} kept values "
          f"equal in {match['output']}", file=sys.stderr)
  return match


def _benchmarks(names: list[str], entries: dict[str, dict]) -> int:
  """Benchmarks NAMES in turn, each need run once (before the first that
  needs it), every placeholder resolved before any work; stops at the
  first that fails, naming those that did not run."""
  commands = {name: _resolved(command_of(name, entries)) for name in names}
  made: dict[str, dict] = {}
  for i, name in enumerate(names):
    if code := _benchmark(name, commands[name], needs_of(name, entries),
                          made):
      print(f"run: {name} failed; not run: {', '.join(names[i + 1:]) or '-'}",
            file=sys.stderr)
      return code
  return 0


def _rerun_family(args: argparse.Namespace, entries: dict[str, dict]) -> int:
  """Several collected runs in one clone, what they need made once."""
  if args.print or not all(n.startswith("runs/") and n in entries
                           for n in args.names):
    print("run: several NAMEs are collected runs (runs/TABLE/RUN.json), "
          "rerun in one clone, or benchmark files, run in turn; not a mix, "
          "not --print (python lab/run.py --list)", file=sys.stderr)
    return 2
  import rerun  # pylint: disable=g-import-not-at-top
  return rerun.rerun_all(
      [(n, _command(n, entries, args.replaced),
        needs_of(n, entries, args.replaced)) for n in args.names],
      keep=args.keep, keep_scratch=args.keep_scratch,
      replaced={run_needs.ref(n): given
                for n, given in args.replaced.items()})


if __name__ == "__main__":
  sys.exit(main())
