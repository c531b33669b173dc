"""Experiment configs: a `get_config()` file plus `--config.key=value`.

Configs are locked ml_collections ConfigDicts, so a misspelt key stops the run
with the list of keys that do exist instead of being silently added.
"""
from __future__ import annotations

import ast
import difflib
import importlib.util
import os
from collections.abc import Sequence

import ml_collections

from paraflax import errors

PREFIX = "--config."


def load_file(path: str) -> ml_collections.ConfigDict:
  if not os.path.isfile(path):
    raise errors.ConfigError(f"{path}: config file not found. Pass one of the files "
                      "in configs/, e.g. --config configs/gran.py")
  spec = importlib.util.spec_from_file_location("paraflax_config", path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  if not hasattr(module, "get_config"):
    raise errors.ConfigError(f"{path}: defines no get_config().")
  config = module.get_config()
  config.lock()
  return config


def _parse(raw: str, current):
  if isinstance(current, bool):
    if raw.lower() not in ("true", "false", "1", "0"):
      raise ValueError(f"expected true/false, got {raw!r}")
    return raw.lower() in ("true", "1")
  if isinstance(current, str):
    return raw
  if isinstance(current, (int, float)):
    return type(current)(raw)
  return ast.literal_eval(raw)


def _unknown(key: str, known: Sequence[str], where: str) -> errors.ConfigError:
  close = difflib.get_close_matches(key.split(".")[-1], known, n=1)
  hint = f" Did you mean {close[0]!r}?" if close else ""
  return errors.ConfigError(f"unknown config key {key!r} (in {where}).{hint} Known "
                     f"keys there: {', '.join(sorted(known))}.")


def override(config: ml_collections.ConfigDict, assignments: Sequence[str]
             ) -> ml_collections.ConfigDict:
  """Applies `--config.a.b=value` strings (values parsed by current type)."""
  for item in assignments:
    if not item.startswith(PREFIX) or "=" not in item:
      raise errors.ConfigError(f"bad override {item!r}: write --config.key=value.")
    key, _, raw = item[len(PREFIX):].partition("=")
    *parents, leaf = key.split(".")
    node = config
    for i, part in enumerate(parents):
      if part not in node:
        raise _unknown(".".join(parents[:i + 1]), list(node.keys()), item)
      node = node[part]
    if not isinstance(node, ml_collections.ConfigDict) or leaf not in node:
      known = list(node.keys()) if isinstance(
          node, ml_collections.ConfigDict) else []
      raise _unknown(key, known, item)
    try:
      value = _parse(raw, node[leaf])
    except (ValueError, SyntaxError) as e:
      raise errors.ConfigError(f"{item}: cannot parse {raw!r} as the type of "
                        f"{key} (now {node[leaf]!r}): {e}") from e
    with config.unlocked():
      node[leaf] = value
  return config


def load(path: str, assignments: Sequence[str] = ()
         ) -> ml_collections.ConfigDict:
  return override(load_file(path), assignments)
