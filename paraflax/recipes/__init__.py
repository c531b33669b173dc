"""Model families on the one train loop, by `config.recipe`."""
from __future__ import annotations

import importlib

# name -> module with `build(config, workdir, shards)`; imported on use.
RECIPES = {"paraphrase": "paraflax.recipes.paraphrase",
           "nmt": "paraflax.recipes.nmt",
           "bilingual": "paraflax.recipes.bilingual"}


def build(config, workdir: str, shards: int):
  from paraflax.training import loop  # pylint: disable=g-import-not-at-top
  loop.check_counts(config)  # before the workdir gets any file
  if config.recipe not in RECIPES:
    from paraflax.config import ConfigError  # pylint: disable=g-import-not-at-top
    raise ConfigError(f"unknown recipe {config.recipe!r}; set recipe to one "
                      f"of {sorted(RECIPES)}.")
  return importlib.import_module(RECIPES[config.recipe]).build(
      config, workdir, shards)
