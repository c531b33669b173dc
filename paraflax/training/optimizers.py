"""The optimizer of a config's `optimizer` block."""
from __future__ import annotations

import ml_collections
import optax


def make(block: ml_collections.ConfigDict) -> optax.GradientTransformation:
  """Adam at `learning_rate`; first the global gradient norm is clipped to
  `clip_norm` when the block has one."""
  adam = optax.adam(block.learning_rate)
  if "clip_norm" not in block:
    # Bare, not a one-element chain: the optimizer state of saved
    # checkpoints has this structure.
    return adam
  return optax.chain(optax.clip_by_global_norm(block.clip_norm), adam)
