"""What the paper presets share: a config of configs/ loaded as the
command line loads it, unlocked so that a preset may add keys."""
import os

import ml_collections

from paraflax import config as config_lib

CONFIGS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(spec: str) -> ml_collections.ConfigDict:
  """configs/`spec` (e.g. "paraphrase.py:gran"), unlocked."""
  config = config_lib.load_file(os.path.join(CONFIGS, spec))
  config.unlock()
  return config
