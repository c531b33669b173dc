"""Config keys the train loop reads, the same for every recipe."""
from __future__ import annotations

import ml_collections


def loop_config(*, eval_every: int, log_every: int, checkpoint_every: int,
                keep: int = 3) -> dict:
  """Keys to `update` a recipe's ConfigDict with."""
  return {
      "eval_every": eval_every,
      "log_every": log_every,
      "checkpoint": ml_collections.ConfigDict(
          {"every": checkpoint_every, "keep": keep}),
      # -1: every visible device on the `data` axis.
      "mesh": ml_collections.ConfigDict({"num_devices": -1}),
      # (regex, tactic) over parameter paths; or ((".*", "fsdp"),).
      "partitioning": ml_collections.ConfigDict(
          {"rules": ((".*", "replicate"),)}),
  }
