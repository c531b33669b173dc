"""Every recipe's train step compiled for three TPU slices, its collectives
against what data parallelism predicts for its parameter bytes.

Each recipe at its default config (configs/), compiled with `paraflax
compile` for each topology at a batch that fills the chips (the config's
batch, or 8 rows a chip where that is more, a multiple of the chips:
compile_presets.fill). Data parallelism predicts one all-reduce of the
parameter bytes an optimizer update; `ratio` is the step's collective
bytes over that prediction times the updates a step makes (a
paraphrase step is a megabatch of updates). The NMT and the bilingual
model run once more with the `fsdp` rule, parameters and optimizer
state split over the chips:
there the prediction is one gather of the parameters and one sum of
their gradients an update, twice the parameter bytes.

    python lab/benchmarks/compile_recipes.py [--topologies v4:2x2x1 v5e:4x4 v5e:16x16]

Writes lab/results/compile_recipes.json (children.write_result); lab/scaling.md
renders it ("Every recipe's train step on three slices").
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# pylint: disable=wrong-import-position
import compile_presets

FSDP = '--config.partitioning.rules=((".*", "fsdp"),)'
# name -> (config, overrides)
RECIPES = {
    "nmt": ("configs/nmt.py:de", []),
    "nmt fsdp": ("configs/nmt.py:de", [FSDP]),
    "bilingual": ("configs/bilingual.py:de", []),
    "bilingual fsdp": ("configs/bilingual.py:de", [FSDP]),
    "mlp_similarity": ("configs/mlp_similarity.py", []),
    "ref_classifier avg": ("configs/ref_classifier.py:avg", []),
    "paraphrase avg": ("configs/paraphrase.py:avg", []),
    # The recurrent encoders' megabatch steps compile slowest: last.
    "paraphrase lstmavg": ("configs/paraphrase.py:lstmavg", []),
    "paraphrase gran": ("configs/paraphrase.py:gran", []),
}


def one(name: str, topology: str) -> dict:
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  from paraflax import recipes  # pylint: disable=g-import-not-at-top
  config, overrides = RECIPES[name]
  paper = config_lib.load(os.path.join(compile_presets.ROOT, config),
                          overrides).batch_size
  row = compile_presets.compiled(config, overrides, "train", paper, topology)
  if "error" in row:
    return {"recipe": name, **row}
  loaded = config_lib.load(os.path.join(compile_presets.ROOT, config),
                           row["overrides"])
  updates = (recipes.family(loaded).updates_per_call(loaded)
             if loaded.recipe in recipes.RECIPES else 1)
  # Data parallelism sums the gradients once an update; fsdp also gathers
  # the parameters once.
  predicted = updates * row["parameter_bytes"] * (2 if FSDP in overrides
                                                  else 1)
  return {"recipe": name, **row, "updates_per_step": updates,
          "predicted_bytes": predicted,
          "ratio": row["collective_bytes_per_step"] / predicted
          if predicted and "collective_bytes_per_step" in row else None}


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--topologies", nargs="+",
                      default=["v4:2x2x1", "v5e:4x4", "v5e:16x16"])
  parser.add_argument("--recipes", nargs="+", default=list(RECIPES))
  parser.add_argument("--output", default=os.path.join(
      compile_presets.ROOT, "lab", "results", "compile_recipes.json"))
  args = parser.parse_args(argv)
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  todo = [(r, t) for r in args.recipes for t in args.topologies]
  rows = []
  for name, topology in todo:  # written after each, the rest `pending`
    rows.append(one(name, topology))
    compile_presets.write(__file__, argv, args.output, rows,
                          pending=todo[len(rows):])
  return 0


if __name__ == "__main__":
  sys.exit(main())
