"""`paraflax compile`: a config's programs compiled for a topology, their
memory, cost and collectives per chip, before a slice is booked."""
from __future__ import annotations

import json
import os
import re
import sys
import time
from typing import Any

import ml_collections

from paraflax import errors
from paraflax import files

GIB = 2**30


def _gib(n: float | None) -> str:
  if n is None:
    return "?"
  return f"{n / GIB:,.2f} GiB" if n >= GIB / 10 else f"{n / 2**20:,.2f} MiB"


def _seconds(s: float | None) -> str:
  if s is None:
    return "no projection (no chip figures for this device)"
  return f"{s * 1e3:,.3f} ms ({1 / s:,.1f} a second)" if s > 0 else "0"


def _collectives(found: list[dict]) -> str:
  """Per kind: how many run a step and their bytes (the JSON has each)."""
  kinds: dict[str, list[int]] = {}
  for c in found:
    runs, size = kinds.setdefault(c["kind"], [0, 0])
    kinds[c["kind"]] = [runs + c["count"], size + c["count"] * c["bytes"]]
  return "; ".join(f"{kind} {runs} x, {_gib(size)}" for kind, (runs, size)
                   in kinds.items()) or "none"


def describe(result: dict[str, Any]) -> str:
  """The lines `paraflax compile` prints for one program."""
  mem = result["memory_bytes_per_chip"]
  fits = {True: "fits", False: "DOES NOT FIT", None: "HBM unknown"}[
      result["fits"]]
  width = f", width {result['width']}" if result["width"] else ""
  lines = [
      f"{result['name']}{width}: one {result['unit']} of "
      f"{result['batch_rows']:,} rows (compiled in "
      f"{result['compile_seconds']:.1f} s)",
      f"  memory per chip  {_gib(mem['total'])} of "
      f"{_gib(result['hbm_bytes_per_chip'])} ({fits}): arguments "
      f"{_gib(mem['arguments'])}, outputs {_gib(mem['outputs'])}, "
      f"temporaries {_gib(mem['temporaries'])}, code "
      f"{_gib(mem['generated_code'])}, donated {_gib(mem['aliased'])}",
      f"  per chip a step  {result['flops_per_step']:.3e} FLOPs, "
      f"{result['bytes_accessed_per_step']:.3e} HBM bytes, "
      f"{result['interconnect_bytes_per_chip']:.3e} interconnect bytes",
      f"  collectives      {_collectives(result['collectives'])} "
      f"({result['resident']} {_gib(result['parameter_bytes'])})",
      f"  projected step   {_seconds(result['projected_step_seconds'])}"
      + (f", bound by {result['bound']}" if result["bound"] else "")]
  if "measured_step_seconds" in result:
    ratio = result["measured_over_projected"]
    lines.append(
        f"  measured step    {_seconds(result['measured_step_seconds'])}, "
        f"{result['achieved_flops_per_second_per_chip']:.3e} FLOP/s a chip"
        + (f", {ratio:.2f}x the projection" if ratio else ""))
  return "\n".join(lines)


def _fix(result: dict[str, Any], config, program: str) -> str:
  need, have = result["memory_bytes_per_chip"]["total"], \
      result["hbm_bytes_per_chip"]
  if program in ("mine", "monods"):
    hints = ["fewer --rows a chip (a larger topology)", "--fp16",
             "a smaller --dim" if program == "mine" else "fewer --bits",
             "a product quantizer's codes on the devices (--pq M: "
             "paraflax mine --index PQ<M> --index-on-devices)"]
  else:
    rules = [tuple(r) for r in config.get("partitioning", {}).get(
        "rules", ())] if "partitioning" in config else []
    hints = ["a smaller --config.batch_size" if program == "train"
             else "a smaller --batch-size"]
    if rules and "fsdp" not in {t for _, t in rules}:
      hints.append("--config.partitioning.rules='((\".*\", \"fsdp\"),)' "
                   "(parameters and optimizer state split over the chips)")
    hints.append("a smaller model (--config.model.*) or a larger topology")
  return (f"{result['name']} needs {_gib(need)} per chip, more than the "
          f"chip's {_gib(have)} of HBM: try " + ", or ".join(hints) + ".")


def _compile(program, compile_only: bool):
  """The compiled program; a compile-only one bypasses the persistent
  cache, whose entries this host could not load back."""
  import jax  # pylint: disable=g-import-not-at-top
  cached = jax.config.jax_enable_compilation_cache
  jax.config.update("jax_enable_compilation_cache", cached and not compile_only)
  try:
    return program.fn.lower(*program.args).compile()
  except jax.errors.JaxRuntimeError as e:
    if "RESOURCE_EXHAUSTED" not in str(e):
      raise
    return OutOfMemory(str(e))
  finally:
    jax.config.update("jax_enable_compilation_cache", cached)


_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


class OutOfMemory:
  """A program XLA refused to compile for want of HBM: its message states
  what the program needs and what the chip has."""

  def __init__(self, message: str):
    self.message = message.splitlines()[0]
    sizes = [float(n) * _UNITS[u] for n, u in
             re.findall(r"\((\d+(?:\.\d+)?)([KMGT])\)", self.message)]
    self.needed, self.available = (sizes + [None, None])[:2]

  def result(self, program, cores: int) -> dict[str, Any]:
    """XLA's figures are a device's: a chip of `cores` devices holds
    `cores` times them."""
    chip = lambda n: None if n is None else n * cores
    return {"name": program.name, "width": program.width,
            "unit": program.unit, "batch_rows": program.batch_rows,
            "fits": False, "xla_message": self.message,
            "memory_bytes_per_chip": {"total": chip(self.needed)},
            "hbm_bytes_per_chip": chip(self.available),
            "parameter_bytes": program.parameter_bytes,
            "widths_run": program.widths_run}


def compile_config(config: ml_collections.ConfigDict, topology: str,
                   program: str = "train", json_path: str | None = None,
                   width: str = "max", batch_size: int | None = None,
                   beam: int = 5, nbest: int = 0, rows: int = 1_000_000,
                   dim: int = 1024, fp16: bool = False, pq: int = 0,
                   words: int = 100_000, measure: int = 0,
                   refuse: bool = True) -> dict[str, Any]:
  """Compiles `program` of `config` for `topology` and reports it; raises
  ConfigError (exit 2) when a program does not fit a chip's HBM. With
  `measure` (topology `local` only) each program also runs that many
  times on this host's devices, timed. `refuse=False` returns the report
  of a program that does not fit instead (benchmarks tabulate it)."""
  from paraflax.aot import programs as programs_lib  # pylint: disable=g-import-not-at-top
  if program not in programs_lib.PROGRAMS:
    raise errors.ConfigError(
        f"--program {program!r}: use one of "
        f"{', '.join(programs_lib.PROGRAMS)}.")
  if program == "train":  # the config as `paraflax train` checks it
    from paraflax.recipes import config_check  # pylint: disable=g-import-not-at-top
    from paraflax.recipes import mlp_similarity  # pylint: disable=g-import-not-at-top
    config_check.check(config, files=False, family=(
        mlp_similarity if config.get("recipe") == mlp_similarity.RECIPE
        else None))
  from paraflax.aot import topology as topology_lib  # pylint: disable=g-import-not-at-top
  if topology != topology_lib.LOCAL:
    # The host compiles for the topology's devices, not its own: jax need
    # not probe for (and warn about) a TPU of this host.
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    # Compile-only clients hold no TPU: several may run at once.
    os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
  target = topology_lib.target(topology)
  if measure and target.compile_only:
    raise errors.ConfigError(
        f"--measure runs the programs, which a compile-only topology "
        f"cannot: use --topology {topology_lib.LOCAL} on the machine to "
        "measure, or leave --measure out.")
  import numpy as np  # pylint: disable=g-import-not-at-top
  from jax.sharding import Mesh  # pylint: disable=g-import-not-at-top
  from paraflax.aot import analysis  # pylint: disable=g-import-not-at-top
  from paraflax.training import partitioning  # pylint: disable=g-import-not-at-top
  mesh = Mesh(np.asarray(target.devices), (partitioning.DATA,))
  options = {"width": width, "beam": beam, "nbest": nbest, "rows": rows,
             "dim": dim, "fp16": fp16, "pq": pq,
             "batch_size": batch_size or (64 if program != "embed" else 256),
             "assume": {"words": words, "nbest": 5, "dim": dim}}
  chip = target.chip
  header = (f"{topology}: {target.chips} x "
            f"{target.devices[0].device_kind}"
            + (f" ({target.cores_per_chip} devices each)"
               if target.cores_per_chip > 1 else "")
            + (" (compile only)" if target.compile_only else ""))
  print(f"paraflax compile: {header}", flush=True)
  results = []
  for p in programs_lib.PROGRAMS[program](config, mesh, options):
    start = time.monotonic()
    compiled = _compile(p, target.compile_only)
    if isinstance(compiled, OutOfMemory):
      results.append(compiled.result(p, target.cores_per_chip))
      print(f"{p.name}: XLA: {compiled.message}", flush=True)
      continue
    result = {"name": p.name, "compile_seconds": time.monotonic() - start,
              **analysis.analyse(p, compiled, mesh.size, chip,
                                 target.cores_per_chip),
              "widths_run": p.widths_run}
    if measure:
      from paraflax.aot import measure as measure_lib  # pylint: disable=g-import-not-at-top
      result.update(measure_lib.report(result, measure_lib.seconds_per_call(
          compiled, p.args, measure, p.feeds_back)))
    results.append(result)
    print(describe(result), flush=True)
  widest = max(results, key=lambda r: (r["fits"] is False,
                                       r["memory_bytes_per_chip"]["total"]))
  report = {"topology": topology, "chips": target.chips,
            "devices": mesh.size,
            "device_kind": target.devices[0].device_kind,
            "compile_only": target.compile_only, "program": program,
            "chip": None if chip is None else chip.__dict__,
            "assumed": options["assume"], **widest, "programs": results,
            "command": " ".join(["paraflax", *sys.argv[1:]])}
  if json_path:
    files.write_text_atomic(json_path, json.dumps(report, indent=1) + "\n")
  if widest["fits"] is False:
    report["refusal"] = _fix(widest, config, program)
    if refuse:
      raise errors.ConfigError(report["refusal"])
  return report
