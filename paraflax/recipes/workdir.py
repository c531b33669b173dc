"""What every workdir holds besides checkpoints: the config it was made by."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
from collections.abc import Callable

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
  """config.json: `config` and the SCHEMA_VERSION it is written in."""
  os.makedirs(workdir, exist_ok=True)
  saved = {VERSION_KEY: SCHEMA_VERSION, **json.loads(config.to_json())}
  files.write_text_atomic(os.path.join(workdir, CONFIG_FILE),
                          json.dumps(saved, indent=2) + "\n")


def _dev_set(saved: dict) -> dict:
  data = saved["data"]
  return {"task": data["dev_task"], "split": data["dev_split"]}


# A workdir saved before the `evals` block has an `eval` block naming what
# the loop evaluated; these give the `evals` and `select` of the same
# evaluation.
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


# Settings a resumed run may change: how long it trains, how fast (the
# length groups compute the same numbers), and how it decodes.
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


def _data_specs(saved: dict) -> dict:
  data = saved.get("data", {})
  if "train_tasks" not in data:
    return saved
  data = {k: v for k, v in data.items()
          if k not in ("train_tasks", "dev_task", "dev_split")}
  dev = f"{saved['data']['dev_task']}:{saved['data']['dev_split']}"
  data.update(train=saved["data"]["train_tasks"], dev=dev,
              allow_dev_overlap=True)
  evals = {}
  for name, e in saved.get("evals", {}).items():
    if "task" in e:
      named = f"{e['task']}:{e['split']}"
      e = {k: v for k, v in e.items() if k not in ("task", "split")}
      e["data"] = "" if named == dev else named  # "": data.dev's set
    evals[name] = e
  saved = {**saved, "data": data, "evals": evals}
  if saved.get("recipe") == "nmt":  # bitext_<corpus>_<lang>_en
    saved = {"lang": saved["data"]["dev"].split(":")[0].split("_")[-2],
             **saved}
  return saved


# What a workdir's config.json holds, by version: `_UPGRADES[v]` brings
# the config of a workdir of version v - 1 to version v. config.json records
# its version under VERSION_KEY (`save_config`; removed on read). One
# without (written before versions were recorded) is version 0 and takes
# every upgrade; those after the first only fill keys that are missing, so
# they are right whenever such a workdir was written.
SCHEMA_VERSION = 18
VERSION_KEY = "schema_version"


def _filled(added: dict) -> Callable[[dict], dict]:
  """The upgrade that gives a config of a recipe in `added` ({recipe:
  {block: {key: value}}, or {recipe: {top-level key: value}}}) the keys it
  lacks, with the values that ran before the keys existed."""
  def fill(saved: dict) -> dict:
    for block, keys in added.get(saved.get("recipe"), {}).items():
      if isinstance(keys, dict):
        saved = {**saved, block: {**keys, **saved.get(block, {})}}
      elif block not in saved:  # a top-level key
        saved = {block: keys, **saved}
    return saved
  return fill


def _mlp_negatives(saved: dict) -> dict:
  if saved.get("recipe") != "mlp_similarity":
    return saved
  renamed = {"random": "shuffled"}.get(saved.get("negatives"))
  saved = _filled({"mlp_similarity": {"band_cut": 0.6,
                                      "negatives_count": 0}})(saved)
  return {**saved, "negatives": renamed} if renamed else saved


_UPGRADES: dict[int, Callable[[dict], dict]] = {
    # Evaluators: `evals` and `select` instead of the `eval` block.
    1: _with_evals,
    # OpenNMT-py's decoder choices, off: the Bahdanau / Sennrich decoder,
    # the mean_tanh bridge, the loss summed over tokens.
    2: _filled({"nmt": {"model": {"input_feeding": False,
                                  "bridge": "mean_tanh"},
                        "loss": {"normalize": "tokens"}}}),
    # The filter of back-translated pairs: none, every pair.
    3: _filled({"paraphrase": {"data": {"filter": None, "max_pairs": 0}}}),
    # Batches sorted by target length; one length group (the same numbers).
    4: _filled({"nmt": {"data": {"sort_by": "target"}},
                "paraphrase": {"length_groups": 1}}),
    # No seqio cache of the Task: the file is read.
    5: _filled({"paraphrase": {"data": {"cache_dir": ""}}}),
    # The vocabulary of the pairs alone.
    6: _filled({"paraphrase": {"data": {"vocab_from_vectors": False}}}),
    # No Tasks mixed by rate.
    7: _filled({"paraphrase": {"data": {"mixture": ()}}}),
    # No output limit per source length (the default since is 1.5 x the
    # source's subwords + 10; the old runs reproduce with ratio 0).
    8: _filled({"nmt": {"decode": {"max_output_ratio": 0.0,
                                   "max_output_plus": 10}}}),
    # Adam at a constant rate.
    9: _filled({"paraphrase": {"optimizer": {"schedule": "constant",
                                             "warmup_steps": 0,
                                             "end_fraction": 0.0}}}),
    # Encoder directions of `hidden` units each.
    10: _filled({"nmt": {"model": {"encoder_hidden": None}}}),
    # MLP negatives: "random" re-paired the positives (now "shuffled"); the
    # paper's bands did not exist.
    11: _mlp_negatives,
    # Data specs: data.train and data.dev, which evaluators follow; dev
    # pairs in the training data were not looked for.
    12: _data_specs,
    # The MLP similarity's data named by specs; "": the bundled sets.
    13: _filled({"mlp_similarity": {"positives": "", "noisy": ""}}),
    # The bilingual decoder started from tanh(W emb), its only start then.
    14: _filled({"bilingual": {"model": {"decoder_start": "bridge"}}}),
    # Train batch widths in multiples of 8, the only choice then.
    15: _filled({"nmt": {"data": {"width_multiple": 8}},
                 "bilingual": {"data": {"width_multiple": 8}}}),
    # Subwords covering every character of the text, the only choice then.
    16: _filled({"nmt": {"vocab": {"character_coverage": 1.0}},
                 "bilingual": {"vocab": {"character_coverage": 1.0}}}),
    # Every process read all of the training pairs, the only choice then.
    17: _filled({"nmt": {"data": {"parts": 1}}}),
    # Every process of a bilingual or paraphrase run read all of its
    # training pairs, the only choice then.
    18: _filled({"bilingual": {"data": {"parts": 1}},
                 "paraphrase": {"data": {"parts": 1}}}),
}
assert sorted(_UPGRADES) == list(range(1, SCHEMA_VERSION + 1))


def upgrade(saved: dict) -> dict:
  """A config.json's dict as its config is written now (the same
  experiment), without its version: the upgrades past its version, in
  order; a config.json of a newer version as it is."""
  saved = dict(saved)
  version = saved.pop(VERSION_KEY, 0)
  for to in range(version + 1, SCHEMA_VERSION + 1):
    saved = _UPGRADES[to](saved)
  return saved


def as_current(config: ml_collections.ConfigDict
               ) -> ml_collections.ConfigDict:
  """A config read from a workdir's config.json (`--config W/config.json`)
  as its recipe writes it now: upgraded, without the version; any other
  config as it is."""
  if VERSION_KEY not in config:
    return config
  current = ml_collections.ConfigDict(upgrade(config.to_dict()))
  current.lock()
  return current


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


# What a start writes into its workdir before its first checkpoint, all
# derived from its config (names as paraflax/training/checkpointing.py,
# metrics.py, recipes/paraphrase.py and data/sentencepiece_vocab.py write
# them); the sentencepiece cache (spm_cache/) is keyed by its inputs, so it
# stays.
STARTED = (CONFIG_FILE, "checkpoints", "best", "metrics.jsonl", "tensorboard",
           "vocab.txt", "src.spm.model", "tgt.spm.model")


def checkpoint_steps(workdir: str) -> list[int]:
  """The steps of the committed checkpoints `workdir` holds to resume
  (the step folders of checkpoints/; a save a kill interrupted has another
  name), in order."""
  folder = os.path.join(workdir, "checkpoints")
  return sorted(int(name) for name in os.listdir(folder)
                if name.isdigit()) if os.path.isdir(folder) else []


def has_checkpoint(workdir: str) -> bool:
  return bool(checkpoint_steps(workdir))


def _remove_start(workdir: str) -> list[str]:
  """Removes the STARTED files of a start that saved no checkpoint; the
  names it removed."""
  removed = []
  for name in STARTED:
    path = os.path.join(workdir, name)
    if os.path.isdir(path) and not os.path.islink(path):
      shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
      with contextlib.suppress(FileNotFoundError):
        os.remove(path)
    else:
      continue
    removed.append(name)
  return removed


def _differs(workdir: str, config: ml_collections.ConfigDict) -> list[str]:
  """The keys (but `_MAY_CHANGE`) in which `config` differs from the one
  `workdir` was started with; none for a new workdir."""
  saved = _read_saved(workdir)
  if saved is None:
    return []
  saved = json.loads(json.dumps(saved))  # upgrade()'s tuples as JSON has them
  now = json.loads(config.to_json())
  return sorted(k for k in set(saved) | set(now)
                if k not in _MAY_CHANGE and saved.get(k) != now.get(k))


def _mixed(workdir: str, diff: list[str]) -> errors.ConfigError:
  return errors.ConfigError(
      f"{workdir} holds a run of a different config (differs in: "
      f"{', '.join(diff)}). Use a new --workdir, or the same config (only "
      f"{', '.join(_MAY_CHANGE)} may change on resume).")


def check_resumable(workdir: str, config: ml_collections.ConfigDict) -> None:
  """Resuming with another config would mix two experiments in one run: a
  workdir with a checkpoint of another config stops the run, as does one
  trained past `train_steps`. Reads only."""
  diff = _differs(workdir, config)
  if diff and has_checkpoint(workdir):
    raise _mixed(workdir, diff)
  steps = checkpoint_steps(workdir)
  train_steps = config.get("train_steps")
  if steps and train_steps is not None and steps[-1] > train_steps:
    raise errors.ConfigError(
        f"{workdir} is trained to step {steps[-1]}, past "
        f"train_steps={train_steps}; set train_steps >= {steps[-1]} to "
        "resume it, or use a new --workdir.")


def check_same_experiment(workdir: str, config: ml_collections.ConfigDict
                          ) -> None:
  """`check_resumable`, under the run's lock (a run that held the lock may
  have saved a checkpoint since `config_check.check`), then: a workdir
  whose start stopped before its first checkpoint (a setting that diverged
  at once, a bad Task) has nothing to resume, so another config replaces
  that start, whose files are removed (they derive from the config it
  replaces), with a line on stderr saying so."""
  check_resumable(workdir, config)
  diff = _differs(workdir, config)
  if not diff:
    return
  removed = _remove_start(workdir)
  print(f"{workdir}: no checkpoint yet, so this config replaces the one of "
        f"its earlier start (differs in: {', '.join(diff)}); removed that "
        f"start's {', '.join(removed)}.", file=sys.stderr, flush=True)
