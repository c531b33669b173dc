"""What stops a `paraflax` command line before any work: it does not parse,
it gives a flag its command lacks or a flag twice, an override names no
key of its config (or of eval-filtering's --nmt-config), or a flag does
nothing without another (cli.refuse_idle_flags); and what stops a lab
script's line: the script is gone, or its arguments do not parse. The
commands the docs show and the commands of the kept runs are checked with
it, so a renamed flag or config key cannot leave a documented command
that fails at once."""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import runpy
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from unittest import mock

from paraflax import cli
from paraflax import commands
from paraflax import config as config_lib
from paraflax import errors

# Usage notation, not a command: [optional], ..., <placeholder>; and a
# shell variable, whose value the shell gives.
_NOTATION = re.compile(r"\[|\.\.\.|<|\$")


def is_paraflax(step: str) -> bool:
  """`step` runs `paraflax COMMAND` (after VAR=value assignments)."""
  words = step.split()
  while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
    words = words[1:]
  return (len(words) > 1 and os.path.basename(words[0]) == "paraflax"
          and words[1] in commands.COMMANDS)


def problem(step: str) -> str:
  """Why the paraflax command line `step` stops before any work; "" when
  it would start (usage notation is not checked)."""
  if _NOTATION.search(step):
    return ""
  try:
    argv = shlex.split(step)
  except ValueError as e:
    return f"does not split into words: {e}"
  while "=" in argv[0]:
    argv = argv[1:]
  stderr = io.StringIO()
  try:
    with contextlib.redirect_stderr(stderr):
      args, rest = cli._parser().parse_known_args(argv[1:])  # pylint: disable=protected-access
  except SystemExit:
    return stderr.getvalue().strip().splitlines()[-1]
  command = commands.COMMANDS[args.command]
  overrides, unknown = cli.leftovers(command, rest)
  if unknown:
    return f"unrecognized arguments: {' '.join(unknown)}"
  flags = cli.rest_of(argv, args.command)
  repeated = cli.repeated_flags(command, flags)
  if repeated:
    return f"{', '.join(repeated)} given more than once"
  given = vars(args)
  try:
    loaded = {"config": config_lib.load(
        given["config"], overrides, cli.config_settings(given))
              } if command.config else {}
    if "nmt_config" in given:
      config_lib.load(given["nmt_config"], given["nmt_override"], {})
    cli.refuse_idle_flags(command, flags, loaded)
  except errors.ConfigError as e:
    return str(e)
  return ""


def steps(text: str, wanted: Callable[[str], bool] = is_paraflax
          ) -> list[str]:
  """The `wanted` command lines (paraflax's, by default) of a shell text:
  lines joined at a trailing backslash, split at `&&`, a leading `$ ` or
  notebook `!` and a `# comment` dropped."""
  out = []
  for line in re.sub(r"\s*\\\n\s*", " ", text).splitlines():
    line = re.sub(r"\s+#.*$", "", line.strip().removeprefix("$ ")
                  .removeprefix("!"))
    out += [s.strip() for s in line.split("&&") if wanted(s.strip())]
  return out


class _Parsed(Exception):
  """A script's arguments parsed: stop it before it does any work."""


@contextlib.contextmanager
def _parse_only() -> Iterator[None]:
  """argparse stops a script with _Parsed once its arguments parse (a
  parse_known_args of the script's own too), and with SystemExit as it
  does when they do not."""
  real_args = argparse.ArgumentParser.parse_args
  real_known = argparse.ArgumentParser.parse_known_args
  inside = []

  def parse_args(self, args=None, namespace=None):
    inside.append(True)
    try:
      real_args(self, args, namespace)
    finally:
      inside.pop()
    raise _Parsed

  def parse_known_args(self, args=None, namespace=None):
    parsed = real_known(self, args, namespace)
    if not inside:
      raise _Parsed
    return parsed

  with mock.patch.object(argparse.ArgumentParser, "parse_args", parse_args), \
      mock.patch.object(argparse.ArgumentParser, "parse_known_args",
                        parse_known_args):
    yield


def script_problem(argv: list[str], root: str) -> str:
  """Why the lab script line `argv` (the script's path from the repository
  `root`, then its arguments) stops before any work: the script is not
  there, a shell script does not parse (bash -n), or a Python script's
  argparse refuses the arguments; "" when it would start. A Python script
  with argparse runs as __main__ until its arguments parse, so only what
  precedes its parsing (imports) runs; one that reads sys.argv itself is
  not run."""
  path = os.path.join(root, argv[0])
  if not os.path.isfile(path):
    return f"{argv[0]} is not in the repository"
  if path.endswith(".sh"):
    done = subprocess.run(["bash", "-n", path], capture_output=True,
                          text=True, check=False)
    return done.stderr.strip()
  with open(path, encoding="utf-8") as f:
    if "argparse" not in f.read():
      return ""
  stderr = io.StringIO()
  saved = sys.argv, sys.path[:]
  sys.argv, sys.path[0:0] = [path, *argv[1:]], [os.path.dirname(path)]
  try:
    with _parse_only(), contextlib.redirect_stderr(stderr):
      runpy.run_path(path, run_name="__main__")
  except _Parsed:
    return ""
  except SystemExit as e:
    lines = stderr.getvalue().strip().splitlines()
    return lines[-1] if lines else f"it exited ({e.code}) before parsing"
  finally:
    sys.argv, sys.path[:] = saved
  return f"{argv[0]} ran to its end without parsing its arguments"


def _script(words: list[str]) -> list[str] | None:
  """`words` from the lab script on (VAR=value assignments and a python in
  front dropped), or None when they run no lab/*.py or lab/*.sh."""
  while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
    words = words[1:]
  if words and os.path.basename(words[0]).startswith("python"):
    words = words[1:]
  if words and words[0].startswith("lab/") and words[0].endswith(
      (".py", ".sh")):
    return words
  return None


def is_lab_script(step: str) -> bool:
  """`step` runs a lab script (`python lab/run.py ...`)."""
  return _script(step.split()) is not None


def script_line(step: str) -> list[str] | None:
  """The lab script command line `step` as argv from the script on; None
  for usage notation or shell variables, which are not checked."""
  if _NOTATION.search(step):
    return None
  return _script(shlex.split(step))


def script_lines(argv: list[str]) -> list[list[str]]:
  """The lab script lines of a command's argv (its `&&`-joined steps)."""
  out, step = [], []
  for word in [*argv, "&&"]:
    if word != "&&":
      step.append(word)
      continue
    script = _script(step)
    if script:
      out.append(script)
    step = []
  return out
