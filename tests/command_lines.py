"""What stops a `paraflax` command line before any work: it does not parse,
it gives a flag its command lacks, or an override names no key of its
config (or of eval-filtering's --nmt-config). The commands the docs show
and the commands of the kept runs are checked with it, so a renamed flag
or config key cannot leave a documented command that fails at once."""
from __future__ import annotations

import contextlib
import io
import os
import re
import shlex

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
  given = vars(args)
  configs = []
  if command.config:
    configs.append((given["config"], overrides, cli.config_settings(given)))
  if "nmt_config" in given:
    configs.append((given["nmt_config"], given["nmt_override"], {}))
  try:
    for spec, assignments, settings in configs:
      config_lib.load(spec, assignments, settings)
  except errors.ConfigError as e:
    return str(e)
  return ""


def steps(text: str) -> list[str]:
  """The paraflax command lines of a shell text: lines joined at a
  trailing backslash, split at `&&`, a leading `$ ` or notebook `!` and a
  `# comment` dropped."""
  out = []
  for line in re.sub(r"\s*\\\n\s*", " ", text).splitlines():
    line = re.sub(r"\s+#.*$", "", line.strip().removeprefix("$ ")
                  .removeprefix("!"))
    out += [s.strip() for s in line.split("&&") if is_paraflax(s.strip())]
  return out
