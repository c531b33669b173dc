"""A pipeline's Plan: its config, its workdir W and each stage's own
config; a stage's folder in W and the DONE.json that marks it finished."""
from __future__ import annotations

import dataclasses
import json
import os

import ml_collections

DONE = "DONE.json"


@dataclasses.dataclass
class Plan:
  """One pipeline: its config, workdir and the stages' own configs."""
  config: ml_collections.ConfigDict
  workdir: str
  configs: dict[str, ml_collections.ConfigDict]

  def folder(self, stage: str) -> str:
    return os.path.join(self.workdir, stage)

  def done(self, stage: str) -> dict | None:
    path = os.path.join(self.folder(stage), DONE)
    if not os.path.exists(path):
      return None
    with open(path, encoding="utf-8") as f:
      return json.load(f)
