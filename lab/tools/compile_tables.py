"""The tables of TPU compiles, from the JSON their benchmarks wrote: the
papers' workloads on three slices (lab/benchmarks/compile_presets.py,
docs/pod.md), every recipe's train step and the pipeline's pod preset
(lab/benchmarks/compile_recipes.py, compile_pipeline_pod.py;
lab/scaling.md), and the programs compiled for a lent GPU and run there
beside their projection (lab/benchmarks/gpu/scale.sh; docs/pod.md)."""
from __future__ import annotations

import json
import os

import markdown_table
import quoted

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULT = os.path.join(ROOT, "lab", "results", "compile_presets.json")
RECIPES = os.path.join(ROOT, "lab", "results", "compile_recipes.json")
POD = os.path.join(ROOT, "lab", "results", "compile_pipeline_pod.json")
GPU = os.path.join(ROOT, "lab", "results", "gpu_scale.mining-compile.nvidia-h200")
GPU_PROGRAMS = ("nmt", "gran", "bilingual", "search", "mine")
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


def _recipe_row(r: dict) -> list[str]:
  if "error" in r:
    return [r["recipe"], r["topology"], "", "", "", "error: " + r["error"]] \
        + [""] * 6
  mem = r["memory_bytes_per_chip"]["total"]
  step = r.get("projected_step_seconds")
  updates = r["updates_per_step"]
  head = [r["recipe"], r["topology"], str(r["chips"]), f"{r['batch_rows']:,}",
          f"{_f(mem / GIB, 2)} / {_f(r['hbm_bytes_per_chip'] / GIB, 1)}",
          "yes" if r["fits"] else "**no**"]
  params = _f(r["parameter_bytes"] / MIB, 1) + (
      f" x {updates} updates" if updates > 1 else "")
  if not r["fits"]:
    return head + ["", params, "", "", "", ""]
  return head + [
      _f(r["collective_bytes_per_step"] / MIB, 1), params,
      _f(r["predicted_bytes"] / MIB, 1), _f(r["ratio"], 2),
      r.get("bound") or "", _f(1 / step, 1) if step else ""]


def compile_recipes() -> list[str]:
  """Recipe x topology: a train step's collective bytes against what its
  rule predicts (data parallelism: the parameter bytes once an update;
  fsdp: twice)."""
  with open(RECIPES, encoding="utf-8") as f:
    result = json.load(f)
  # What a run stopped before compiling (the result's `pending`).
  left = [[name, topology, "", "", "", "not compiled yet"] + [""] * 6
          for name, topology in result.get("pending", [])]
  return markdown_table.table(
      ["recipe", "topology", "chips", "rows a step",
       "memory per chip / HBM (GiB)", "fits", "collectives a step (MiB)",
       "parameters (MiB)", "predicted (MiB)", "ratio", "bound",
       "projected steps/s"],
      [_recipe_row(r) for r in result["rows"]] + left, 2)


def compile_pipeline_pod() -> list[str]:
  """The pipeline's pod preset, stage by stage, compiled for its slice:
  the projections configs/pipeline.py:pod takes as seconds_per_unit."""
  with open(POD, encoding="utf-8") as f:
    rows = json.load(f)["rows"]
  return markdown_table.table(
      ["stage", "program", "topology", "batch", "rows a step",
       "memory per chip / HBM (GiB)", "fits", "bound", "projected step (ms)",
       "unit", "units a step", "seconds a unit"],
      [[r["stage"], r["program"], r["topology"], f"{r['batch_size']:,}",
        f"{r['batch_rows']:,}",
        f"{_f(r['memory_bytes_per_chip']['total'] / GIB, 2)} / "
        f"{_f(r['hbm_bytes_per_chip'] / GIB, 1)}",
        "yes" if r["fits"] else "**no**", r.get("bound") or "",
        _f(r["projected_step_seconds"] * 1000, 2), r["unit"],
        f"{r['units_per_step']:,}", f"{r['seconds_per_unit']:.3g}"]
       for r in rows], 3)


def _pod_backtranslate_s() -> float:
  """The pod preset's back-translation projected: its sentences at the
  compiled search's seconds a sentence (configs/pipeline.py's header)."""
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  preset = config_lib.load(os.path.join(ROOT, "configs/pipeline.py:pod"), [])
  with open(POD, encoding="utf-8") as f:
    (row,) = (r for r in json.load(f)["rows"] if r["stage"] == "backtranslate")
  return preset.backtranslate.sentences * row["seconds_per_unit"]


def _beyond_parameters_mib(recipe: str, topology: str = "v5e:4x4") -> str:
  """What `recipe`'s step moves past data parallelism's all-reduce of its
  parameters, an update (MiB; lab/scaling.md)."""
  (r,) = (r for r in _recipe_rows()
          if r["recipe"] == recipe and r["topology"] == topology)
  extra = r["collective_bytes_per_step"] - r["predicted_bytes"]
  return f"{extra / r['updates_per_step'] / MIB:.1f}"


def _recipe_rows() -> list[dict]:
  """compile_recipes.py's rows that compiled and fit their chips."""
  with open(RECIPES, encoding="utf-8") as f:
    return [r for r in json.load(f)["rows"] if "error" not in r and r["fits"]]


def _ratios(rule: str, paraphrase: bool | None = None) -> str:
  """The span of collective bytes over the prediction under `rule`, of
  the paraphrase encoders' steps, of the other recipes' or (None) of all
  (lab/scaling.md, docs/pod.md)."""
  return markdown_table.span(
      [r["ratio"] for r in _recipe_rows()
       if r["recipe"].endswith(" fsdp") == (rule == "fsdp")
       and paraphrase in (None, r["recipe"].startswith("paraphrase "))],
      unit="")


def _fsdp_speedup() -> str:
  """The span of `fsdp`'s projected steps/s over `replicate`'s, recipe by
  recipe and slice by slice (the models compiled under both)."""
  steps = {(r["recipe"], r["topology"]): 1 / r["projected_step_seconds"]
           for r in _recipe_rows()}
  return markdown_table.span(
      [rate / steps[(recipe[:-len(" fsdp")], topology)]
       for (recipe, topology), rate in steps.items()
       if recipe.endswith(" fsdp")], 1, unit="")


VALUES = {"compile_recipes.ratio.replicate": lambda: _ratios("replicate"),
          "compile_recipes.ratio.replicate.other": lambda: _ratios(
              "replicate", False),
          "compile_recipes.ratio.replicate.paraphrase": lambda: _ratios(
              "replicate", True),
          "compile_recipes.ratio.fsdp": lambda: _ratios("fsdp"),
          "compile_recipes.fsdp_over_replicate": _fsdp_speedup,
          "compile_pipeline_pod.backtranslate_s":
          lambda: quoted.duration(_pod_backtranslate_s()),
          **{f"compile_recipes.beyond_parameters_mib.{model}": (
              lambda model=model: _beyond_parameters_mib(f"paraphrase {model}"))
             for model in ("avg", "lstmavg", "gran")}}


def gpu_measured() -> list[str]:
  """Each program of scale.sh's compile phase on the GPU: the projection
  for the chip beside the step measured on it (`--measure`)."""
  rows = []
  for program in GPU_PROGRAMS:
    with open(os.path.join(GPU, f"compile_{program}.json"),
              encoding="utf-8") as f:
      r = json.load(f)
    rows.append([
        r["name"], f"{r['batch_rows']:,}", str(r["width"] or ""),
        _f(r["compile_seconds"], 1),
        _f(r["memory_bytes_per_chip"]["total"] / GIB, 2),
        f"{r['flops_per_step']:.2e}", r["bound"],
        _f(r["projected_step_seconds"] * 1000, 2),
        _f(r["measured_step_seconds"] * 1000, 2),
        _f(r["measured_steps_per_second"], 1),
        _f(r["achieved_flops_per_second_per_chip"] / 1e12, 2),
        _f(r["measured_over_projected"], 2) + "x"])
  return markdown_table.table(
      ["program", "rows a step", "width", "compile (s)", "memory (GiB)",
       "FLOPs a step", "bound", "projected step (ms)", "measured step (ms)",
       "measured steps/s", "achieved TFLOP/s", "measured / projected"],
      rows, 1)


TABLES = (compile_presets, compile_recipes, compile_pipeline_pod,
          gpu_measured)
