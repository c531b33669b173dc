"""`paraflax <command>`: parses the flags and calls the command's function.

The commands, their flags and the functions they call are in
`paraflax.commands`, one module per stage; the function is imported only
once its command runs, so `--help` answers at once and no command pays for
a framework it does not use.
"""
from __future__ import annotations

import argparse
import errno
import importlib
import json
import os
import shlex
import sys
import textwrap
import traceback

from paraflax import commands
from paraflax import config as config_lib
from paraflax import errors
from paraflax import files
from paraflax import quiet

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C
# Flags (argparse dests) that name files a command reads, and files or
# folders it writes: no output may be an input (`files.refuse_inputs_as_
# outputs`). A workdir is read by the commands that also have an output.
INPUT_DESTS = ("input", "src", "ref", "tgt", "src_emb", "tgt_emb",
               "src_text", "tgt_text", "in_domain", "general_src",
               "general_tgt", "general_langs", "test", "dev", "bitext",
               "corpus", "table_path", "lm", "select_dir", "ppdb",
               "coverage_texts", "classifier_workdir", "task", "workdir")
OUTPUT_DESTS = ("output", "filtered_output", "parts", "json_path")
# A Task named by its file (`backtranslated:SCORED.jsonl`) reads that file.
_FILE_TASKS = ("backtranslated:", "selected:")
# The checkout that holds configs/: where a command's default config is.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _add_config(parser: argparse.ArgumentParser, config: bool | str) -> None:
  default = f" (default: {config})" if isinstance(config, str) else ""
  parser.add_argument(
      "--config", required=not default,
      default=os.path.join(ROOT, config) if default else None,
      help=f"configs/<name>.py, or configs/<name>.py:<arg> for "
      f"get_config(<arg>){default}. Each key is set by the file, then by "
      "--config.key=value, then by a flag marked [config: key]; the later "
      "wins.")


def _by_stage(width: int = 79) -> str:
  """The commands under their stages' titles, as `git help` lists them."""
  out = ["commands, by stage (`paraflax <command> --help` gives its flags):"]
  for stage in commands.STAGES:
    out += ["", stage.TITLE]
    for name, command in stage.COMMANDS.items():
      lines = textwrap.wrap(command.help, width - 24) or [""]
      first = f"  {name:<20}  " if len(name) <= 20 else f"  {name}\n{'':24}"
      out.append(first + lines[0])
      out += [" " * 24 + line for line in lines[1:]]
  return "\n".join(out)


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
      prog="paraflax", usage="%(prog)s [-h] [--verbose] <command> [<args>]",
      description="Paraphrastic sentence embeddings and "
      "bitext mining in JAX/Flax.", epilog=_by_stage(),
      formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--verbose", action="store_true",
                      help="show TensorFlow's and XLA's start-up logs, and "
                      "the traceback of an error")
  # The commands are listed by stage in the epilog, not by argparse.
  sub = parser.add_subparsers(dest="command", required=True,
                              metavar="<command>", help=argparse.SUPPRESS)
  for name, command in commands.COMMANDS.items():
    p = sub.add_parser(name, prog=f"paraflax {name}",
                       description=command.description)
    if command.config:
      _add_config(p, command.config)
    for names, kwargs in command.flags:
      p.add_argument(*names, **kwargs)
  return parser


def _paths(command: commands.Command, args: argparse.Namespace,
           dests: tuple[str, ...]) -> list[tuple[str, str]]:
  """(flag, path) for each of `dests` given, each item of a list flag."""
  names = {kwargs.get("dest", names[0].lstrip("-").replace("-", "_")):
           names[0] for names, kwargs in command.flags}
  out = []
  for dest in dests:
    values = getattr(args, dest, None)
    for value in values if isinstance(values, list) else [values]:
      if isinstance(value, str) and value:
        for prefix in _FILE_TASKS:
          value = value.removeprefix(prefix)
        out.append((names.get(dest, dest), value))
  return out


def _call(command: commands.Command, args: argparse.Namespace,
          overrides: list[str], argv: list[str] = ()) -> None:
  outputs = _paths(command, args, OUTPUT_DESTS)
  if outputs:
    files.refuse_inputs_as_outputs(_paths(command, args, INPUT_DESTS),
                                   outputs)
  # A workdir in training is read as its newest (whole) checkpoint, by
  # design; any other input still being written is only part of itself.
  files.refuse_unfinished_inputs(_paths(command, args, tuple(
      d for d in INPUT_DESTS if not d.endswith("workdir"))))
  if command.prepare:
    _function(command.prepare)()
  if command.compiles:
    _function("paraflax.compile_cache:use")()
  kwargs = {k: v for k, v in vars(args).items()
            if k not in ("command", "verbose")}
  if command.config:
    settings = config_settings(kwargs)
    kwargs = {k: v for k, v in kwargs.items()
              if not k.startswith(commands.SETTING)}
    kwargs["config"] = config_lib.load(kwargs["config"], overrides, settings)
  refuse_idle_flags(command, argv, kwargs)
  if "distributed" in kwargs:  # the processes of one run: the same settings
    from paraflax.training import distributed  # pylint: disable=g-import-not-at-top
    distributed.expect_same_settings(
        {k: json.loads(v.to_json_best_effort()) if k == "config" else v
         for k, v in kwargs.items()})
  _function(command.target)(**kwargs)


def config_settings(given: dict) -> dict:
  """The config keys that `setting` flags gave (their dests are config. +
  key), by key."""
  return {k[len(commands.SETTING):]: v for k, v in given.items()
          if k.startswith(commands.SETTING)}


def leftovers(command: commands.Command, rest: list[str]
              ) -> tuple[list[str], list[str]]:
  """The --config.key=value overrides among the arguments argparse left,
  and those `command` cannot take (its overrides too, if it has no
  config)."""
  overrides = [a for a in rest if a.startswith(config_lib.PREFIX)]
  unknown = [a for a in rest if not a.startswith(config_lib.PREFIX)]
  return overrides, unknown or ([] if command.config else overrides)


def _function(target: str):
  """The function named by "module:function", its module imported."""
  module, _, function = target.partition(":")
  return getattr(importlib.import_module(module), function)


def main(argv: list[str] | None = None) -> int:
  parser = _parser()
  args, rest = parser.parse_known_args(argv)
  command = commands.COMMANDS[args.command]
  overrides, unknown = leftovers(command, rest)
  if unknown:
    parser.error(f"unrecognized arguments: {' '.join(unknown)}")
  rest = rest_of(argv, args.command)
  repeated = repeated_flags(command, rest)
  if repeated:
    parser.error(f"{', '.join(repeated)} given more than once: give each "
                 "flag once")
  if args.verbose:
    os.environ[quiet.VERBOSE_ENV] = "1"
  quiet.quiet_native_logs()
  try:
    _call(command, args, overrides, rest)
  except KeyboardInterrupt:
    print(f"paraflax {args.command}: interrupted. {_kept(command)}; the same "
          f"command resumes: {_command_line(argv)}", file=sys.stderr)
    return EXIT_INTERRUPTED
  except (*errors.USER_ERRORS, OSError) as e:
    if args.verbose:
      traceback.print_exc()
    message = _os_message(e) if isinstance(e, OSError) else str(e)
    print(f"paraflax {args.command}: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT
  finally:
    files.release_output_locks()
  return 0


def rest_of(argv: list[str] | None, name: str) -> list[str]:
  """The arguments after the command's name."""
  argv = sys.argv[1:] if argv is None else argv
  return argv[argv.index(name) + 1:] if name in argv else argv


# Flags a user may give several times: each one adds a value.
_REPEATABLE_ACTIONS = ("append", "extend", "count")


def _dests(command: commands.Command, repeatable: bool = True
           ) -> dict[str, str]:
  """Each option string of `command` (--no-X too) -> its argparse dest."""
  dests = {}
  for names, kwargs in command.flags:
    if repeatable or kwargs.get("action") not in _REPEATABLE_ACTIONS:
      dest = kwargs.get("dest", names[0].lstrip("-").replace("-", "_"))
      dests.update({name: dest for name in names})
      if kwargs.get("action") is argparse.BooleanOptionalAction:
        dests.update({"--no-" + name[2:]: dest for name in names})
  if command.config:
    dests["--config"] = "config"
  return dests


def repeated_flags(command: commands.Command, argv: list[str]) -> list[str]:
  """The flags given more than once: argparse would keep the last value
  without a word. --config.key=value may repeat a key (the later wins), so
  that a list of overrides can be amended."""
  dests = _dests(command, repeatable=False)
  seen, out = set(), []
  for arg in argv:
    name = arg.split("=", 1)[0]
    dest = dests.get(name)  # --config.key=value overrides: the later wins
    if dest is not None and dest in seen and name not in out:
      out.append(name)
    seen.add(dest)
  return out


def refuse_idle_flags(command: commands.Command, argv: list[str],
                       kwargs: dict) -> None:
  """A flag given without the one it acts with (`Command.needs`) changes
  nothing: refused rather than ignored without a word."""
  dests = _dests(command)
  given = {dests.get(arg.split("=", 1)[0]) for arg in argv}
  for flag, other in command.needs:
    dest = dests[other]
    if dests[flag] not in given or dest in given:
      continue
    if dest.startswith(commands.SETTING) and kwargs["config"].get(
        dest[len(commands.SETTING):]) not in (None, ""):
      continue  # set by the config file or an override
    raise errors.ConfigError(f"{flag} does nothing without {other}: give "
                             f"{other}, or leave {flag} out.")


def _kept(command: commands.Command) -> str:
  return command.kept or ("Finished outputs are kept and nothing is "
                          "half-written")


def _command_line(argv: list[str] | None) -> str:
  return shlex.join(["paraflax", *(sys.argv[1:] if argv is None else argv)])


# The fix for each file-system error a user can meet, by errno.
_OS_HINTS = {
    errno.ENOSPC: "the disk is full: free space (or write elsewhere), then "
    "rerun the same command; finished work is kept",
    errno.EDQUOT: "the disk quota is used up: free space, then rerun the "
    "same command; finished work is kept",
    errno.EACCES: "choose a path you may write to, or fix its permissions",
    errno.EPERM: "choose a path you may write to, or fix its permissions",
    errno.EROFS: "the file system is read-only: choose a writable path",
    errno.ENOTDIR: "a part of the path is a file, not a folder: choose "
    "another path",
    errno.EISDIR: "it is a folder: give a file path",
    errno.EEXIST: "a file is in the way: choose another path",
    errno.ENOENT: "check the path",
}


def _os_message(e: OSError) -> str:
  where = " -> ".join(str(f) for f in (e.filename, e.filename2) if f)
  hint = _OS_HINTS.get(e.errno, "check the path and the disk")
  return f"{where or 'file system'}: {e.strerror or e}. Fix: {hint}."


if __name__ == "__main__":
  sys.exit(main())
