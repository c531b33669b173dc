"""Metrics to `<workdir>/metrics.jsonl` and to TensorBoard (clu writers)."""
from __future__ import annotations

import json
import math
import os

from typing import Any

from paraflax import faults
from paraflax import files

JSONL = "metrics.jsonl"


class MetricsWriter:
  """Appends one JSON object per step; a resumed run first drops the rows a
  killed run wrote after its last checkpoint, so each step appears once.
  Only the `primary` process of a multi-process run writes (all of them
  hold the same values)."""

  def __init__(self, workdir: str, resume_step: int, tensorboard: bool = True,
               primary: bool = True):
    self.path = os.path.join(workdir, JSONL) if primary else None
    self._tb = None
    if not primary:
      return
    self._truncate_after(resume_step)
    if tensorboard:
      from clu import metric_writers  # pylint: disable=g-import-not-at-top
      self._tb = metric_writers.SummaryWriter(
          os.path.join(workdir, "tensorboard"))

  def _truncate_after(self, step: int) -> None:
    if not os.path.exists(self.path):
      return
    with open(self.path, encoding="utf-8") as f:
      # A kill inside a write leaves a half row after the last newline.
      rows = f.read().split("\n")[:-1]
    kept = [row + "\n" for row in rows
            if row.strip() and json.loads(row)["step"] <= step]
    files.write_text_atomic(self.path, "".join(kept))

  def write(self, step: int, values: dict[str, float]) -> None:
    if self.path is None:
      return
    row = {"step": step, **{k: float(v) for k, v in values.items()}}
    with open(self.path, "a", encoding="utf-8") as f:
      f.write(json.dumps(row, allow_nan=True) + "\n")
    faults.moment("metrics.written")
    if self._tb is not None:
      self._tb.write_scalars(step, {k: v for k, v in row.items()
                                    if k != "step" and math.isfinite(v)})

  def close(self) -> None:
    if self._tb is not None:
      self._tb.flush()
      self._tb.close()


class Pending:
  """Train-step metrics left on the devices (jax arrays) until the loop
  needs their values: one transfer for many steps instead of a host
  synchronisation per step."""

  def __init__(self):
    self._steps: list[tuple[int, dict[str, Any]]] = []

  def __len__(self) -> int:
    return len(self._steps)

  def add(self, step: int, values: dict[str, Any]) -> None:
    self._steps.append((step, values))

  def fetch(self) -> list[tuple[int, dict[str, float]]]:
    """(step, values) of every pending step, in order; none pending after."""
    import jax  # pylint: disable=g-import-not-at-top
    fetched = jax.device_get([v for _, v in self._steps])
    out = [(step, {k: float(v) for k, v in values.items()})
           for (step, _), values in zip(self._steps, fetched)]
    self._steps.clear()
    return out
