"""The grid of a sweep (`sweep.py`): its points, each a name (its workdir)
and a config (base + settings + overrides) checked before anything trains,
and which worker runs which."""
from __future__ import annotations

import ast
import dataclasses
import hashlib
import itertools
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import ml_collections

from paraflax import config as config_lib
from paraflax import errors
from paraflax.recipes import config_check

# The checkout that holds configs/: where a relative `base` is read.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
KEYS = ("base", "settings", "overrides", "points", "axes", "columns")
_NAME_LIMIT = 80  # longer point names end in a digest instead


@dataclasses.dataclass(frozen=True)
class Point:
  index: int  # position in the sweep: picks its worker
  name: str  # its workdir under the sweep's
  overrides: tuple[str, ...]  # "key=value"
  config: ml_collections.ConfigDict  # base + settings + overrides


def assignments(alternative: str | Sequence[str]) -> tuple[str, ...]:
  return (alternative,) if isinstance(alternative, str) else tuple(alternative)


def grid(sweep: ml_collections.ConfigDict) -> list[tuple[str, ...]]:
  """The overrides of every point: the listed points, then the product of
  the axes."""
  listed = [assignments(p) for p in sweep.points]
  axes = [[assignments(a) for a in axis] for axis in sweep.axes]
  crossed = [sum(combo, ()) for combo in itertools.product(*axes)] \
      if axes else []
  return listed + crossed


def _value_part(raw: str) -> str:
  """A dict or tuple value shows its values only: "length-0-10"."""
  try:
    value = ast.literal_eval(raw)
  except (ValueError, SyntaxError):
    return raw
  if isinstance(value, Mapping):
    return "-".join(map(str, value.values()))
  if isinstance(value, (tuple, list)):
    return "-".join(map(str, value))
  return str(value)


def point_name(overrides: Sequence[str]) -> str:
  """A readable, filesystem-safe name that depends on the overrides only:
  "filter-length-0-10" for data.filter={'score': 'length', 'lo': 0, ...}."""
  parts = []
  for item in overrides:
    key, _, raw = item.partition("=")
    parts.append(f"{key.rpartition('.')[2]}-{_value_part(raw)}")
  name = re.sub(r"[^A-Za-z0-9._]+", "-", "_".join(parts)).strip("-._")
  name = name or "base"
  if len(name) > _NAME_LIMIT:
    digest = hashlib.sha256("\n".join(overrides).encode()).hexdigest()[:8]
    name = f"{name[:_NAME_LIMIT - 9]}-{digest}"
  return name


def flat_settings(settings: Mapping[str, Any], base: ml_collections.ConfigDict,
          prefix: str = "") -> Iterator[tuple[str, Any]]:
  """{"data.max_pairs": 2000, ...}: a block is walked only where the base
  config has one, so a dict value (data.filter) stays one value."""
  for key in settings.keys():
    value = settings[key]
    if (key in base and isinstance(base[key], ml_collections.ConfigDict)
        and isinstance(value, (Mapping, ml_collections.ConfigDict))):
      yield from flat_settings(value, base[key], f"{prefix}{key}.")
    else:
      yield f"{prefix}{key}", value


def _base(spec: str) -> str:
  path, arg = config_lib.split_spec(spec)
  path = path if os.path.isabs(path) else os.path.join(ROOT, path)
  return path if arg is None else f"{path}:{arg}"


def _check_keys(sweep: ml_collections.ConfigDict) -> None:
  missing = [k for k in KEYS if k not in sweep]
  if missing:
    raise errors.ConfigError(
        f"the sweep config sets no {', '.join(missing)}; a sweep config "
        f"sets {', '.join(KEYS)} (see paraflax/inference/sweep.py).")


def points(sweep: ml_collections.ConfigDict) -> list[Point]:
  """Every point with its config; a bad override stops here, naming the
  point and the key, before anything trains."""
  _check_keys(sweep)
  base = config_lib.load_file(_base(sweep.base))
  settings = dict(flat_settings(sweep.settings, base))
  found: dict[str, Point] = {}
  by_config: dict[str, Point] = {}  # points spelled two ways are one
  for index, overrides in enumerate(grid(sweep)):
    name = point_name(overrides)
    if name in found:
      raise errors.ConfigError(
          f"sweep points {found[name].overrides} and {overrides} are the "
          f"same point ({name}); list each once.")
    config = config_lib.override(config_lib.load_file(_base(sweep.base)),
                                 (), settings)
    try:
      config_lib.override(config, [config_lib.PREFIX + o for o in
                                   (*sweep.overrides, *overrides)])
      config_check.check(config)
    except errors.ConfigError as e:
      raise errors.ConfigError(f"sweep point {name}: {e}") from e
    same = by_config.setdefault(config.to_json_best_effort(sort_keys=True),
                                Point(index, name, overrides, config))
    if same.name != name:
      raise errors.ConfigError(
          f"sweep points {same.overrides} and {overrides} give the same "
          "config (one value spelled two ways); list each point once.")
    found[name] = same
  if not found:
    raise errors.ConfigError("the sweep has no point: set points or axes.")
  return list(found.values())


def mine(all_points: Sequence[Point], worker: int | None, workers: int
         ) -> list[Point]:
  """Point k goes to worker k mod n; no worker: every point."""
  if workers < 1 or (worker is not None and not 0 <= worker < workers):
    raise errors.ConfigError(f"--worker {worker} --workers {workers}: give "
                             "0 <= worker < workers.")
  return [p for p in all_points
          if worker is None or p.index % workers == worker]
