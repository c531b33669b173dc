"""docs/pod.md's table: the papers' workloads compiled for TPU slices
(lab/benchmarks/compile_presets.py), from the JSON it wrote."""
from __future__ import annotations

import json
import os

import markdown_table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULT = os.path.join(ROOT, "lab", "results", "compile_presets.json")
GIB, MIB = 2**30, 2**20

_f = markdown_table.num


def _time(hours: float | None) -> str:
  if hours is None:
    return ""
  return f"{hours * 60:,.1f} min" if hours < 1 else f"{hours:,.1f} h"


def _row(r: dict) -> list[str]:
  if "error" in r:
    return [r["preset"], r["topology"], "", "", "", "error: " + r["error"]] \
        + [""] * 7
  mem = r["memory_bytes_per_chip"]["total"]
  step = r.get("projected_step_seconds")
  head = [r["preset"], r["topology"], str(r["chips"]), f"{r['batch_rows']:,}",
          f"{_f(mem / GIB, 2)} / {_f(r['hbm_bytes_per_chip'] / GIB, 1)}",
          "yes" if r["fits"] else "**no**"]
  if not r["fits"]:
    return head + ["", "", _f(r["parameter_bytes"] / GIB, 2)] + [""] * 4
  return head + [
      f"{r['flops_per_step']:.2e}", _f(r["collective_bytes_per_step"] / MIB, 1),
      _f(r["parameter_bytes"] / GIB, 2), r.get("bound") or "",
      _f(1 / step, 1) if step else "", _time(r.get("hours")),
      _f(r["chip_hours"], 0) if r.get("chip_hours") is not None else ""]


def compile_presets() -> list[str]:
  """Preset x topology: memory per chip, FLOPs, collective bytes,
  projected steps/s, and the workload's projected time and chip-hours."""
  with open(RESULT, encoding="utf-8") as f:
    rows = json.load(f)["rows"]
  return markdown_table.table(
      ["preset", "topology", "chips", "rows a step",
       "memory per chip / HBM (GiB)", "fits", "FLOPs a step per chip",
       "collectives a step (MiB)", "parameters or data (GiB)", "bound",
       "projected steps/s", "workload time", "chip-hours"],
      [_row(r) for r in rows], 2)


TABLES = (compile_presets,)
