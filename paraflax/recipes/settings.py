"""The ranges of a training config's sizes, rates and steps, checked from the
config alone, before a workdir gets any file and before any data loads.

`RULES` is the one table: a key pattern (fnmatch over the dotted key, so
`*batch_size` matches `batch_size` and `eval.batch_size`) and the range its
value must lie in. The first pattern that matches a key decides; a key no
pattern matches is not checked here, and a pattern whose key a config lacks
checks nothing. `config_check.check`, the one check of a config, runs
`check` first.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import math
from collections.abc import Callable, Iterator
from typing import Any

import ml_collections

from paraflax import errors


@dataclasses.dataclass(frozen=True)
class Range:
  """What a value must be: `holds(value)`, said as `want` in messages."""
  want: str
  holds: Callable[[Any], bool]


def _int(value) -> bool:
  return isinstance(value, int) and not isinstance(value, bool)


def _number(value) -> bool:
  return (isinstance(value, (int, float)) and not isinstance(value, bool)
          and math.isfinite(value))


POSITIVE_INT = Range("an integer >= 1", lambda v: _int(v) and v >= 1)
COUNT = Range("an integer >= 0", lambda v: _int(v) and v >= 0)
INTEGER = Range("an integer", _int)
# model.encoder_hidden: None (the default) takes model.hidden.
POSITIVE_INT_OR_NONE = Range("an integer >= 1, or None",
                             lambda v: v is None or (_int(v) and v >= 1))
DEVICES = Range("-1 (every visible device) or an integer >= 1",
                lambda v: _int(v) and (v == -1 or v >= 1))
POSITIVE = Range("a finite number > 0", lambda v: _number(v) and v > 0)
NON_NEGATIVE = Range("a finite number >= 0", lambda v: _number(v) and v >= 0)
FRACTION = Range("a number with 0 <= x <= 1",
                 lambda v: _number(v) and 0 <= v <= 1)
FRACTION_BELOW_ONE = Range("a number with 0 <= x < 1",
                           lambda v: _number(v) and 0 <= v < 1)
SHARE = Range("a number with 0 < x <= 1", lambda v: _number(v) and 0 < v <= 1)

# (key patterns, range); the first row with a matching pattern decides.
RULES: tuple[tuple[tuple[str, ...], Range], ...] = (
    # Counts where 0 means none, all or off.
    (("*warmup_steps",), COUNT),  # 0: no warmup
    (("*_every", "*.every"), COUNT),  # 0: only at the last step
    (("*vocab_max_size", "*max_pairs"), COUNT),  # 0: no limit
    (("negatives_count",), COUNT),  # 0: as many as the positives
    (("*vocab_min_count",), COUNT),
    (("decode.max_output_plus",), COUNT),
    (("seed",), INTEGER),
    (("mesh.num_devices",), DEVICES),
    (("*encoder_hidden",), POSITIVE_INT_OR_NONE),
    # Sizes and steps: at least one.
    (("*batch_size", "megabatch", "*max_len", "*_dim", "dim", "*hidden",
      "layers", "epochs", "length_groups", "vocab.size", "*steps",
      "checkpoint.keep", "decode.max_output", "*sentences", "*.beam"),
     POSITIVE_INT),
    # Rates and weights.
    (("*learning_rate", "*clip_norm"), POSITIVE),
    (("*lambda_*", "*.alpha", "*max_output_ratio", "loss.margin"),
     NON_NEGATIVE),
    (("*label_smoothing", "heldout_fraction"), FRACTION_BELOW_ONE),
    (("worst_fraction", "band_cut", "vocab.character_coverage"), SHARE),
    (("*_fraction", "*scramble"), FRACTION),
)


def _leaves(config: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
  for key, value in config.items():
    name = f"{prefix}{key}"
    if isinstance(value, (ml_collections.ConfigDict, dict)):
      yield from _leaves(value, name + ".")
    else:
      yield name, value


def range_of(key: str) -> Range | None:
  """The range `RULES` gives the dotted `key`, or None."""
  for patterns, found in RULES:
    if any(fnmatch.fnmatchcase(key, p) for p in patterns):
      return found
  return None


def problems(config: ml_collections.ConfigDict) -> list[str]:
  """One line per key whose value is out of its range, in key order."""
  found = []
  for key, value in _leaves(config):
    wanted = range_of(key)
    if wanted is not None and not wanted.holds(value):
      found.append(f"{key}={value!r} must be {wanted.want} (set "
                   f"--config.{key} to one)")
  return found


def check(config: ml_collections.ConfigDict) -> None:
  """ConfigError naming every key out of range, its value and the fix."""
  bad = problems(config)
  if bad:
    raise errors.ConfigError(
        f"{len(bad)} setting(s) out of range: " + "; ".join(bad)
        + ". Nothing was written.")
