"""Model families on the one train loop, by `config.recipe`."""
from __future__ import annotations

import importlib

from paraflax import errors

# name -> module with `build(config, workdir, mesh)`; imported on use.
RECIPES = {"paraphrase": "paraflax.recipes.paraphrase",
           "nmt": "paraflax.recipes.nmt",
           "bilingual": "paraflax.recipes.bilingual",
           "ref_classifier": "paraflax.recipes.ref_classifier"}


def _module(config):
  if config.recipe not in RECIPES:
    raise errors.ConfigError(f"unknown recipe {config.recipe!r}; set recipe "
                             f"to one of {sorted(RECIPES)}.")
  return importlib.import_module(RECIPES[config.recipe])


def build(config, workdir: str, mesh):
  """The recipe of `config.recipe`, its batches split over `mesh`."""
  from paraflax.training import loop  # pylint: disable=g-import-not-at-top
  loop.check_counts(config)  # before the workdir gets any file
  return _module(config).build(config, workdir, mesh)


def updates_per_call(config) -> int:
  """Optimizer updates one train step of `config.recipe` makes, from the
  config alone, so that the intervals are checked before any data loads."""
  return _module(config).updates_per_call(config)
