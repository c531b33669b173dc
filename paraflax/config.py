"""Experiment configs: a `get_config()` file, then `--config.key=value`
overrides, then a command's shorthand flags (`--k 8` for `--config.k=8`);
a later one wins.

`--config configs/nmt.py:de` calls `get_config("de")`, `--config
configs/gran.py` calls `get_config()`. A config file imports the pieces it
shares with others as `from configs import common`: while a file loads, the
package `configs` is the folder that holds it, whatever is on sys.path, so
nothing is installed and a copied folder of configs uses its own pieces.

Configs are locked ml_collections ConfigDicts, so a misspelt key stops the
run with the list of keys that do exist instead of being silently added.
"""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import difflib
import importlib
import importlib.machinery
import importlib.util
import inspect
import os
import re
import sys
import traceback
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

import ml_collections

from paraflax import errors

T = TypeVar("T")

PREFIX = "--config."
PACKAGE = "configs"  # what config files import their shared pieces from


def split_spec(spec: str) -> tuple[str, str | None]:
  """"configs/nmt.py:de" -> ("configs/nmt.py", "de"); no ":" -> None."""
  match = re.fullmatch(r"(.+\.py):(.*)", spec)
  return (match[1], match[2]) if match else (spec, None)


def _ours(name: str) -> bool:
  return name == PACKAGE or name.startswith(PACKAGE + ".")


@contextlib.contextmanager
def _configs_package(folder: str) -> Iterator[None]:
  """`import configs.x` finds `folder`/x.py while the block runs; the
  modules of an earlier load (or a `configs` on sys.path) are set aside."""
  saved = {k: sys.modules.pop(k) for k in list(sys.modules) if _ours(k)}
  spec = importlib.machinery.ModuleSpec(PACKAGE, None, is_package=True)
  spec.submodule_search_locations = [folder]
  sys.modules[PACKAGE] = importlib.util.module_from_spec(spec)
  importlib.invalidate_caches()
  try:
    yield
  finally:
    for name in [k for k in sys.modules if _ours(k)]:
      del sys.modules[name]
    sys.modules.update(saved)


def _failure(spec: str, folder: str, e: BaseException) -> errors.ConfigError:
  """The file and line of the config code that raised `e` (or exited)."""
  if isinstance(e, SyntaxError) and e.filename:
    where = f"{errors.shown_path(e.filename)}:{e.lineno}"
  else:
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if os.path.dirname(os.path.abspath(f.filename)) == folder]
    where = (f"{errors.shown_path(frames[-1].filename)}:"
             f"{frames[-1].lineno}" if frames else spec)
  if isinstance(e, SystemExit):
    return errors.ConfigError(
        f"{where}: the config exits (sys.exit({e.code!r})) while loading "
        f"{spec}; a config file defines get_config(), which returns a "
        "ConfigDict. Remove the exit.")
  return errors.ConfigError(f"{where}: {type(e).__name__}: {e} (loading the "
                            f"config {spec})")


def _check_arguments(get_config, path: str, arg: str | None) -> None:
  params = inspect.signature(get_config).parameters.values()
  needs = [p for p in params if p.default is p.empty
           and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
  if arg is None and needs:
    raise errors.ConfigError(
        f"{path}: get_config needs its {needs[0].name}: pass "
        f"--config {path}:<{needs[0].name}> (see the file's header).")
  if arg is not None and not params:
    raise errors.ConfigError(f"{path} takes no argument: pass --config "
                             f"{path}, without ':{arg}'.")


def load_file(spec: str) -> ml_collections.ConfigDict:
  """The locked ConfigDict of `spec`: a config file, or `file.py:arg`."""
  path, arg = split_spec(spec)
  if path.endswith(".json") and os.path.isfile(path):
    return _load_json(path)
  if not os.path.isfile(path) or not path.endswith(".py"):
    raise errors.ConfigError(f"{path}: config file not found. Pass one of the "
                             "files in configs/, e.g. --config configs/gran.py"
                             ", or a workdir's config.json")
  folder = os.path.dirname(os.path.abspath(path))
  name = f"{PACKAGE}.{os.path.splitext(os.path.basename(path))[0]}"
  # Whatever the file's code raises, or a sys.exit in it, is a ConfigError
  # naming the file and line.
  with _configs_package(folder):
    try:
      module = importlib.util.module_from_spec(
          importlib.util.spec_from_file_location(name, path))
      sys.modules[name] = module
      module.__spec__.loader.exec_module(module)
    except (Exception, SystemExit) as e:  # pylint: disable=broad-except
      raise _failure(spec, folder, e) from e
    get_config = getattr(module, "get_config", None)
    if not callable(get_config):
      raise errors.ConfigError(f"{path}: defines no get_config().")
    _check_arguments(get_config, path, arg)
    try:
      config = get_config() if arg is None else get_config(arg)
    except (Exception, SystemExit) as e:  # pylint: disable=broad-except
      raise _failure(spec, folder, e) from e
  if not isinstance(config, ml_collections.ConfigDict):
    raise errors.ConfigError(f"{spec}: get_config returned a "
                             f"{type(config).__name__}, not a ConfigDict.")
  config.lock()
  return config


def _load_json(path: str) -> ml_collections.ConfigDict:
  """A config saved as JSON (a workdir's config.json): the settings a run
  was started with, to resume it or start another like it."""
  import json  # pylint: disable=g-import-not-at-top
  try:
    with open(path, encoding="utf-8") as f:
      saved = json.load(f)
  except (ValueError, UnicodeDecodeError) as e:
    raise errors.ConfigError(f"{path}: not a JSON config ({e}).") from None
  if not isinstance(saved, dict):
    raise errors.ConfigError(f"{path}: holds a {type(saved).__name__}, not "
                             "a config (a JSON object of keys).")
  config = ml_collections.ConfigDict(saved)
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
  if current is None:  # unset; a placeholder's type is checked on assignment
    if raw.lower() in ("none", "null", "true", "false"):
      return {"none": None, "null": None, "true": True,
              "false": False}[raw.lower()]
    try:
      return ast.literal_eval(raw)
    except (ValueError, SyntaxError):
      return raw
  if isinstance(current, tuple) and not raw.lstrip().startswith(("(", "[")):
    # One item of a tuple of strings (data.train=tsv:F): the item alone.
    if all(isinstance(item, str) for item in current):
      return (raw,) if raw else ()
  return ast.literal_eval(raw)


def _unknown(key: str, known: Sequence[str], where: str) -> errors.ConfigError:
  close = difflib.get_close_matches(key.split(".")[-1], known, n=1)
  hint = f" Did you mean {close[0]!r}?" if close else ""
  return errors.ConfigError(f"unknown config key {key!r} (in {where}).{hint} "
                            f"Known keys there: {', '.join(sorted(known))}.")


def _set(config: ml_collections.ConfigDict, key: str, where: str,
         value_of) -> None:
  """Sets `key` (dotted) to `value_of(current value)`; `where` names the
  override or flag in errors."""
  *parents, leaf = key.split(".")
  node = config
  for i, part in enumerate(parents):
    if part not in node:
      raise _unknown(".".join(parents[:i + 1]), list(node.keys()), where)
    node = node[part]
  if not isinstance(node, ml_collections.ConfigDict) or leaf not in node:
    known = list(node.keys()) if isinstance(
        node, ml_collections.ConfigDict) else []
    raise _unknown(key, known, where)
  try:
    value = value_of(node[leaf])
    with config.unlocked():
      node[leaf] = value
  except (ValueError, SyntaxError, TypeError) as e:
    raise errors.ConfigError(f"{where}: not a value for {key} (now "
                             f"{node[leaf]!r}): {e}") from e


def override(config: ml_collections.ConfigDict, assignments: Sequence[str],
             settings: Mapping[str, Any] | None = None
             ) -> ml_collections.ConfigDict:
  """Applies `--config.a.b=value` strings (values parsed by current type),
  then `settings` ({"a.b": value}, the shorthand flags' values)."""
  for item in assignments:
    if not item.startswith(PREFIX) or "=" not in item:
      raise errors.ConfigError(f"bad override {item!r}: write --config.key=value.")
    key, _, raw = item[len(PREFIX):].partition("=")
    _set(config, key, item, lambda current, raw=raw: _parse(raw, current))
  for key, value in (settings or {}).items():
    _set(config, key, f"the flag for {key} ({value!r})",
         lambda current, value=value: value)
  return config


def load(spec: str, assignments: Sequence[str] = (),
         settings: Mapping[str, Any] | None = None
         ) -> ml_collections.ConfigDict:
  """The config of `spec` with `assignments`, then `settings`, applied."""
  return override(load_file(spec), assignments, settings)


def fields_of(cls: type[T], config: Mapping[str, Any] | None) -> T:
  """`cls(**config)` for a dataclass whose fields are a config's keys (as
  configs/mine.py's are pipeline.Options'); None: `cls()`."""
  if config is None:
    return cls()
  names = [f.name for f in dataclasses.fields(cls)]
  extra = sorted(set(config.keys()) - set(names))
  if extra:
    raise errors.ConfigError(
        f"config keys {', '.join(extra)} are not settings of {cls.__name__} "
        f"({', '.join(names)}).")
  return cls(**{k: config[k] for k in config.keys()})
