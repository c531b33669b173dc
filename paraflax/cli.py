"""`paraflax <command>`: the command line.

Imports stay inside the commands so that `--help` answers at once and no
command pays for a framework it does not use.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

EXIT_BAD_INPUT = 2


def _parser() -> argparse.ArgumentParser:
  parser = argparse.ArgumentParser(
      prog="paraflax", description="Paraphrastic sentence embeddings and "
      "bitext mining in JAX/Flax.")
  sub = parser.add_subparsers(dest="command", required=True)

  train = sub.add_parser("train", help="train a model from a config file",
                         description="Trains (or resumes) the experiment of "
                         "a config file; override keys with "
                         "--config.key=value.")
  train.add_argument("--config", required=True, help="configs/<name>.py")
  train.add_argument("--workdir", required=True,
                     help="checkpoints, metrics and the vocabulary go here; "
                     "rerunning resumes from the newest checkpoint")
  train.add_argument("--distributed", action="store_true",
                     help="call jax.distributed.initialize() (multi-host)")

  embed = sub.add_parser("embed", help="embed sentences with a trained model",
                         description="One sentence per line in; a raw "
                         "little-endian float32 N x d matrix out (LASER's "
                         "format), same row order.")
  embed.add_argument("--workdir", required=True)
  embed.add_argument("--input", required=True)
  embed.add_argument("--output", required=True)

  sub.add_parser("tasks", help="list the registered data Tasks and Mixtures",
                 description="Tasks and Mixtures a config can name in "
                 "data.task, with their features and splits.")

  ev = sub.add_parser("eval-sts", help="STS table of a trained model",
                      description="Prints the STS table and writes it to "
                      "<workdir>/sts.json.")
  ev.add_argument("--workdir", required=True)
  return parser


def _train(args: argparse.Namespace, overrides: list[str]) -> None:
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  config = config_lib.load(args.config, overrides)
  _check_same_experiment(args.workdir, config)
  _hide_gpus_from_tensorflow()
  import jax  # pylint: disable=g-import-not-at-top
  if args.distributed:
    jax.distributed.initialize()
  from paraflax import recipes  # pylint: disable=g-import-not-at-top
  from paraflax.training import loop  # pylint: disable=g-import-not-at-top
  from paraflax.training import partitioning  # pylint: disable=g-import-not-at-top
  shards = partitioning.make_mesh(config.mesh.num_devices).size
  recipe = recipes.build(config, args.workdir, shards)
  loop.check_intervals(config, recipe.updates_per_call)

  def report(step: int, values: dict[str, float]) -> None:
    shown = ", ".join(f"{k}={v:.4f}" for k, v in values.items()
                      if k.endswith("pearson"))
    print(f"step {step}: {shown}", flush=True)

  loop.train(recipe, config, args.workdir, on_eval=report)
  print(f"done: {config.train_steps} steps in {args.workdir}", flush=True)


def _check_same_experiment(workdir: str, config) -> None:
  """Resuming with another config would mix two experiments in one run."""
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  path = os.path.join(workdir, "config.json")
  if not os.path.exists(path):
    return
  with open(path, encoding="utf-8") as f:
    saved = json.load(f)
  now = json.loads(config.to_json())
  diff = sorted(k for k in set(saved) | set(now)
                if k != "train_steps" and saved.get(k) != now.get(k))
  if diff:
    raise config_lib.ConfigError(
        f"{workdir} holds a run of a different config (differs in: "
        f"{', '.join(diff)}). Use a new --workdir, or the same config (only "
        "train_steps may change on resume).")


def _hide_gpus_from_tensorflow() -> None:
  # TensorFlow only feeds data; it must not grab accelerator memory from JAX.
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  tf.config.set_visible_devices([], "GPU")


def _embed(args: argparse.Namespace) -> None:
  import numpy as np  # pylint: disable=g-import-not-at-top
  from paraflax import files  # pylint: disable=g-import-not-at-top
  from paraflax.data import readers  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import paraphrase  # pylint: disable=g-import-not-at-top
  texts, _ = readers.read_lines(args.input)
  if not texts:
    raise readers.DataError(f"{args.input}: empty file, nothing to embed. "
                            "Give one sentence per line.")
  embedder, params, step = paraphrase.load_for_inference(args.workdir)
  emb = embedder(params, texts).astype("<f4")
  with files.atomic_output(args.output) as f:
    f.write(emb.tobytes())
  print(f"wrote {emb.shape[0]} x {emb.shape[1]} float32 to {args.output} "
        f"(checkpoint step {step})", file=sys.stderr)


def _eval_sts(args: argparse.Namespace) -> None:
  from paraflax import files  # pylint: disable=g-import-not-at-top
  from paraflax.evaluation import sts  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import paraphrase  # pylint: disable=g-import-not-at-top
  embedder, params, step = paraphrase.load_for_inference(args.workdir)
  result = sts.evaluate(lambda texts: embedder(params, texts))
  result["checkpoint_step"] = step
  print(f"STS, checkpoint step {step} of {args.workdir}")
  print(sts.format_table(result))
  files.write_text_atomic(os.path.join(args.workdir, "sts.json"),
                          json.dumps(result, indent=2) + "\n")


def _tasks(_: argparse.Namespace) -> None:
  from paraflax.data import corpora  # pylint: disable=g-import-not-at-top
  for name, summary in corpora.catalogue().items():
    print(f"{name:<40} {summary}")


def main(argv: list[str] | None = None) -> int:
  args, rest = _parser().parse_known_args(argv)
  overrides = [a for a in rest if a.startswith("--config.")]
  unknown = [a for a in rest if not a.startswith("--config.")]
  if unknown or (overrides and args.command != "train"):
    _parser().error(f"unrecognized arguments: {' '.join(unknown or overrides)}")
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  try:
    {"train": lambda: _train(args, overrides),
     "embed": lambda: _embed(args),
     "eval-sts": lambda: _eval_sts(args),
     "tasks": lambda: _tasks(args)}[args.command]()
  except errors.USER_ERRORS as e:
    print(f"paraflax {args.command}: error: {e}", file=sys.stderr)
    return EXIT_BAD_INPUT
  return 0


if __name__ == "__main__":
  sys.exit(main())
