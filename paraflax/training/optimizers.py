"""The optimizer of a config's `optimizer` block."""
from __future__ import annotations

from typing import Callable

import ml_collections
import optax

from paraflax import errors

# How the rate moves after the warmup, by `optimizer.schedule`: from
# `learning_rate` at the warmup's end to `end_fraction` x it at train_steps.
_DECAYS: dict[str, Callable[[float, float, int], optax.Schedule]] = {
    "constant": lambda lr, end, steps: optax.constant_schedule(lr),
    "linear_decay": lambda lr, end, steps: optax.linear_schedule(
        lr, end * lr, steps),
    "cosine": lambda lr, end, steps: optax.cosine_decay_schedule(
        lr, steps, alpha=end),
}
# The optimizers of `optimizer.name` (absent: adam).
OPTIMIZERS = {"adam": optax.adam, "sgd": optax.sgd}


def _step_decay(block: ml_collections.ConfigDict) -> optax.Schedule:
  """`schedule="step_decay"`: `learning_rate` until `decay_start` updates,
  then multiplied by `decay_rate` every `decay_every` updates (the first
  time at decay_start + decay_every), as Kim et al. 2019 train (1.0, x 0.9
  every 50k after 100k)."""
  for key in ("decay_start", "decay_every", "decay_rate"):
    if key not in block:
      raise errors.ConfigError(
          f"optimizer.schedule=step_decay needs optimizer.{key} (e.g. "
          "decay_start=100000, decay_every=50000, decay_rate=0.9).")
  if block.decay_every <= 0 or block.decay_start < 0:
    raise errors.ConfigError(
        f"optimizer.decay_every={block.decay_every}, decay_start="
        f"{block.decay_start}: give decay_every > 0 and decay_start >= 0.")
  return optax.exponential_decay(
      block.learning_rate, transition_steps=block.decay_every,
      decay_rate=block.decay_rate, transition_begin=block.decay_start,
      staircase=True)


def learning_rate(block: ml_collections.ConfigDict,
                  train_steps: int) -> float | optax.Schedule:
  """The rate of `block`: `warmup_steps` rising linearly from 0, then its
  `schedule` over the rest of `train_steps`. Blocks without the keys (NMT,
  bilingual) are constant."""
  name = block.get("schedule", "constant")
  if name == "step_decay":
    return _step_decay(block)
  if name not in _DECAYS:
    raise errors.ConfigError(
        f"optimizer.schedule={name!r}: use one of {', '.join(_DECAYS)}, "
        "step_decay.")
  warmup = block.get("warmup_steps", 0)
  if name == "constant" and not warmup:
    # A float, not a schedule: Adam's state then holds no step count, as
    # the state of checkpoints saved before schedules existed.
    return block.learning_rate
  if not 0 <= warmup < train_steps:
    raise errors.ConfigError(
        f"optimizer.warmup_steps={warmup}: must be at least 0 and below "
        f"train_steps={train_steps}.")
  decay = _DECAYS[name](block.learning_rate, block.get("end_fraction", 0.0),
                        train_steps - warmup)
  if not warmup:
    return decay
  rise = optax.linear_schedule(0.0, block.learning_rate, warmup)
  return optax.join_schedules([rise, decay], [warmup])


def make(block: ml_collections.ConfigDict,
         train_steps: int) -> optax.GradientTransformation:
  """Adam (or `optimizer.name`, adam | sgd) at `learning_rate(block,
  train_steps)`; first the global gradient norm is clipped to `clip_norm`
  when the block has one. A run resumed with more train_steps follows the
  longer schedule from where it stopped."""
  name = block.get("name", "adam")
  if name not in OPTIMIZERS:
    raise errors.ConfigError(
        f"optimizer.name={name!r}: use one of {', '.join(OPTIMIZERS)}.")
  inner = OPTIMIZERS[name](learning_rate(block, train_steps))
  if "clip_norm" not in block:
    # Bare, not a one-element chain: the optimizer state of saved
    # checkpoints has this structure.
    return inner
  return optax.chain(optax.clip_by_global_norm(block.clip_norm), inner)
