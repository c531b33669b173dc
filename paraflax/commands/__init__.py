"""Every `paraflax <command>`: its flags, its help, and the function it calls.

Data, not code: one module per stage holds that stage's table (`TITLE`,
`COMMANDS`); `cli.py` builds the parser from `COMMANDS` and lists the
commands by stage in `paraflax --help`. The targets ("module:function") are
the library's own functions, in the rooms they belong to. Nothing here
imports anything heavy, so `--help` answers at once.
"""
from __future__ import annotations

from paraflax.commands import compile as compile_
from paraflax.commands import data
from paraflax.commands import domain
from paraflax.commands import evaluate
from paraflax.commands import filtering
from paraflax.commands import mining
from paraflax.commands import pipeline
from paraflax.commands import train
from paraflax.commands import translate
from paraflax.commands.base import Command
from paraflax.commands.base import Flag
from paraflax.commands.base import flag
from paraflax.commands.base import KEEP_FREED_MEMORY
from paraflax.commands.base import setting
from paraflax.commands.base import SETTING

__all__ = ["COMMANDS", "Command", "Flag", "KEEP_FREED_MEMORY", "SETTING",
           "STAGES", "flag", "setting"]

# The stages in the order `paraflax --help` and docs/commands.md list them.
STAGES = (data, train, translate, filtering, mining, domain, evaluate,
          pipeline, compile_)


def _merge() -> dict[str, Command]:
  out: dict[str, Command] = {}
  for stage in STAGES:
    twice = set(out) & set(stage.COMMANDS)
    if twice:
      raise ValueError(f"commands named twice: {sorted(twice)}")
    out.update(stage.COMMANDS)
  return out


COMMANDS: dict[str, Command] = _merge()
