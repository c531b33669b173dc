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


def _dev_set(saved: dict) -> dict:
  data = saved["data"]
  return {"task": data["dev_task"], "split": data["dev_split"]}


# Before evaluators (2026-11-23), a config's `eval` block named what the loop
# evaluated; these give the `evals` and `select` of the same evaluation.
_EVALS_OF_EVAL = {
    "paraphrase": lambda saved, old: (
        {"sts": {"type": "sts", "sets": old["sets"]},
         "sts_all": {"type": "sts", "in_training": False}},
        f"sts/{old['select']}/pearson"),
    "nmt": lambda saved, old: (
        {"dev": {"type": "bleu", **_dev_set(saved), "beam": old["beam"],
                 "sentences": old["sentences"]},
         "dev_all": {"type": "bleu", **_dev_set(saved), "beam": 5,
                     "in_training": False}}, "dev/bleu"),
    "bilingual": lambda saved, old: (
        {"dev": {"type": "alignment", **_dev_set(saved), "lang": saved["lang"],
                 "sentences": old["sentences"]},
         "tests": {"type": "alignment_recovery", "lang": saved["lang"],
                   "in_training": False},
         "paracrawl": {"type": "paracrawl", "lang": saved["lang"],
                       "in_training": False}}, "dev/align_accuracy"),
}


# Keys added to a recipe's config since, per block, with the values that
# ran before them (issue 17: OpenNMT-py's choices, off; issue 11: no filter
# of back-translated pairs, all of them; issue 14: the vocabulary of the
# pairs alone, no Tasks mixed by rate).
_ADDED = {"nmt": {"model": {"input_feeding": False, "bridge": "mean_tanh",
                            # Issue 14: encoder directions of `hidden` units.
                            "encoder_hidden": None},
                  "loss": {"normalize": "tokens"},
                  "data": {"sort_by": "target"},
                  # Issue 14: no output limit per source length (the
                  # default since is 1.5 + 10; old runs reproduce with 0).
                  "decode": {"max_output_ratio": 0.0, "max_output_plus": 10}},
          "paraphrase": {"data": {"filter": None, "max_pairs": 0,
                                  "cache_dir": "",
                                  "vocab_from_vectors": False,
                                  "mixture": ()},
                         # Issue 14: Adam at a constant rate.
                         "optimizer": {"schedule": "constant",
                                       "warmup_steps": 0,
                                       "end_fraction": 0.0},
                         "length_groups": 1}}
# Settings a resumed run may change: how long it trains, how fast (the
# length groups compute the same numbers, issue 14), and how it decodes.
# Decoding never touches the parameters, so the trained model is the same;
# what it changes is the in-training dev BLEU: rows of metrics.jsonl written
# before the resume were decoded with the old settings, those after with
# the new, and the best checkpoint is chosen over both. The saved
# config.json then holds the new settings, which `paraflax eval` and
# `paraflax translate` use.
_MAY_CHANGE = ("train_steps", "length_groups", "decode")


def _with_evals(saved: dict) -> dict:
  if ("evals" in saved or "eval" not in saved
      or saved.get("recipe") not in _EVALS_OF_EVAL):
    return saved
  evals, select = _EVALS_OF_EVAL[saved["recipe"]](saved, saved["eval"])
  # The bilingual recipe still reads `eval` (for its dev loss).
  rest = {k: v for k, v in saved.items()
          if k != "eval" or saved["recipe"] == "bilingual"}
  return {**rest, "evals": evals, "select": select}


def upgrade(saved: dict) -> dict:
  """A config.json written before evaluators or before keys of `_ADDED`, as
  its config is written now (the same experiment); a newer one as it is."""
  saved = _with_evals(saved)
  for block, keys in _ADDED.get(saved.get("recipe"), {}).items():
    if isinstance(keys, dict):
      saved = {**saved, block: {**keys, **saved.get(block, {})}}
    else:  # a top-level key
      saved = {block: keys, **saved}
  return saved


def _read_saved(workdir: str) -> dict | None:
  path = os.path.join(workdir, CONFIG_FILE)
  if not os.path.exists(path):
    return None
  with open(path, encoding="utf-8") as f:
    return upgrade(json.load(f))


def read_config(workdir: str) -> ml_collections.ConfigDict:
  """The workdir's config, whichever recipe made it."""
  saved = _read_saved(workdir)
  if saved is None:
    raise errors.NoCheckpointError(
        f"{workdir}: not a paraflax workdir (no {CONFIG_FILE}). Train first, "
        "e.g. paraflax train --config configs/gran.py --workdir " + workdir)
  return ml_collections.ConfigDict(saved)


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
  saved = _read_saved(workdir)
  if saved is None:
    return
  saved = json.loads(json.dumps(saved))  # upgrade()'s tuples as JSON has them
  now = json.loads(config.to_json())
  diff = sorted(k for k in set(saved) | set(now)
                if k not in _MAY_CHANGE and saved.get(k) != now.get(k))
  if diff:
    raise errors.ConfigError(
        f"{workdir} holds a run of a different config (differs in: "
        f"{', '.join(diff)}). Use a new --workdir, or the same config (only "
        f"{', '.join(_MAY_CHANGE)} may change on resume).")
