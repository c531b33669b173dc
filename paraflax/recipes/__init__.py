"""Model families on the one train loop, by `config.recipe`."""
from __future__ import annotations

import importlib

from paraflax import errors

# name -> module with `build(config, workdir, mesh)`; imported on use.
RECIPES = {"paraphrase": "paraflax.recipes.paraphrase",
           "nmt": "paraflax.recipes.nmt",
           "bilingual": "paraflax.recipes.bilingual",
           "ref_classifier": "paraflax.recipes.ref_classifier"}


def family(config):
  """The module of `config.recipe`: its `build`, `check` and
  `updates_per_call`."""
  if config.recipe not in RECIPES:
    raise errors.ConfigError(f"unknown recipe {config.recipe!r}; set recipe "
                             f"to one of {sorted(RECIPES)}" + (
                                 " (an MLP similarity trains with `paraflax "
                                 "train-mlp --workdir BILINGUAL_WORKDIR`)"
                                 if config.recipe == "mlp_similarity"
                                 else "") + ".")
  return importlib.import_module(RECIPES[config.recipe])


def build(config, workdir: str, mesh):
  """The recipe of `config.recipe`, its batches split over `mesh`; `config`
  is one `config_check.check` passed."""
  return family(config).build(config, workdir, mesh)
