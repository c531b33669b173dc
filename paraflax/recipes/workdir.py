"""What every workdir holds besides checkpoints: the config it was made by."""
from __future__ import annotations

import json
import os

import ml_collections

from paraflax import errors
from paraflax import files

CONFIG_FILE = "config.json"


def check_writable(workdir: str) -> None:
  """Fails before any work if `workdir` cannot be a folder we write into."""
  if os.path.exists(workdir) and not os.path.isdir(workdir):
    raise errors.ConfigError(f"{workdir}: is a file, not a directory; give "
                             "--workdir a folder (new or a run to resume).")
  existing = workdir
  while not os.path.exists(existing):
    existing = os.path.dirname(os.path.abspath(existing))
  if not os.access(existing, os.W_OK):
    raise errors.ConfigError(f"{workdir}: no permission to write in "
                             f"{existing}; choose a writable --workdir.")


def save_config(workdir: str, config: ml_collections.ConfigDict) -> None:
  os.makedirs(workdir, exist_ok=True)
  files.write_text_atomic(os.path.join(workdir, CONFIG_FILE),
                          config.to_json(indent=2) + "\n")


def read_config(workdir: str) -> ml_collections.ConfigDict:
  """The workdir's config, whichever recipe made it."""
  path = os.path.join(workdir, CONFIG_FILE)
  if not os.path.exists(path):
    raise errors.NoCheckpointError(
        f"{workdir}: not a paraflax workdir (no {CONFIG_FILE}). Train first, "
        "e.g. paraflax train --config configs/gran.py --workdir " + workdir)
  with open(path, encoding="utf-8") as f:
    return ml_collections.ConfigDict(json.load(f))


def load_config(workdir: str, recipe: str) -> ml_collections.ConfigDict:
  """The workdir's config; it must come from `recipe`."""
  config = read_config(workdir)
  if config.recipe != recipe:
    raise errors.ConfigError(
        f"{workdir} holds a {config.recipe!r} model; this command needs a "
        f"{recipe!r} workdir.")
  return config


def check_same_experiment(workdir: str, config: ml_collections.ConfigDict
                          ) -> None:
  """Resuming with another config would mix two experiments in one run."""
  path = os.path.join(workdir, CONFIG_FILE)
  if not os.path.exists(path):
    return
  with open(path, encoding="utf-8") as f:
    saved = json.load(f)
  now = json.loads(config.to_json())
  diff = sorted(k for k in set(saved) | set(now)
                if k != "train_steps" and saved.get(k) != now.get(k))
  if diff:
    raise errors.ConfigError(
        f"{workdir} holds a run of a different config (differs in: "
        f"{', '.join(diff)}). Use a new --workdir, or the same config (only "
        "train_steps may change on resume).")
