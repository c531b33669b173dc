"""What a compiled program costs per chip, and its roofline step time.

Memory comes from XLA's `memory_analysis` (what one chip holds while the
program runs), FLOPs and HBM bytes from its `cost_analysis` with loop
bodies scaled to their trip counts (`flops.py`), collectives from the HLO
(`hlo.py`). The roofline takes the slowest of compute (FLOPs / peak),
HBM (bytes / bandwidth) and interconnect (bytes each chip sends / ICI
bandwidth): the step time if the three overlapped perfectly, a lower
bound on the real one.
"""
from __future__ import annotations

from typing import Any

from paraflax.aot import chips as chips_lib
from paraflax.aot import flops
from paraflax.aot import hlo


def _cost(compiled) -> dict[str, float]:
  cost = compiled.cost_analysis()
  if isinstance(cost, (list, tuple)):  # older jax: one dict per program
    cost = cost[0] if cost else {}
  return dict(cost or {})


def memory(compiled, cores: int = 1) -> dict[str, int]:
  """What one chip holds: `cores` devices of it each run the program."""
  m = compiled.memory_analysis()
  out = {"arguments": cores * int(m.argument_size_in_bytes),
         "outputs": cores * int(m.output_size_in_bytes),
         "temporaries": cores * int(m.temp_size_in_bytes),
         "generated_code": cores * int(m.generated_code_size_in_bytes),
         # Donated inputs whose buffers the outputs reuse (the train state).
         "aliased": cores * int(m.alias_size_in_bytes)}
  out["total"] = (out["arguments"] + out["outputs"] + out["temporaries"]
                  + out["generated_code"] - out["aliased"])
  return out


def roofline(flops_per_chip: float, hbm_bytes: float, ici_bytes: float,
             chip: chips_lib.Chip | None) -> dict[str, Any]:
  if chip is None:
    return {"projected_step_seconds": None, "bound": None, "times": None}
  times = {"compute": flops_per_chip / chip.peak_flops,
           "hbm": hbm_bytes / chip.hbm_bytes_per_s,
           "interconnect": ici_bytes / chip.ici_bytes_per_s}
  bound = max(times, key=times.get)
  return {"projected_step_seconds": times[bound], "bound": bound,
          "times": times}


def analyse(program, compiled, devices: int, chip: chips_lib.Chip | None,
            cores: int = 1) -> dict[str, Any]:
  """The figures of one compiled program on `devices` devices, per chip
  of `cores` devices."""
  cost = _cost(compiled)
  full, once = flops.matmul_flops(program.fn, *program.args,
                                  while_trips=program.while_trips)
  # XLA counts per chip, as partitioned, but each loop body once; the
  # jaxpr's matmuls give the loops' share.
  scale = full / once if once else 1.0
  per_chip = cores * cost.get("flops", 0.0) * scale
  hbm = cores * cost.get("bytes accessed", 0.0) * scale
  found = hlo.collectives(compiled.as_text(), program.while_trips)
  ici = cores * sum(hlo.moved_bytes(c, devices) * c.count for c in found)
  mem = memory(compiled, cores)
  hbm_capacity = chip.hbm_bytes if chip else None
  return {
      "width": program.width, "unit": program.unit,
      "batch_rows": program.batch_rows,
      "memory_bytes_per_chip": mem,
      "hbm_bytes_per_chip": hbm_capacity,
      "fits": None if hbm_capacity is None else mem["total"] <= hbm_capacity,
      "flops_per_step": per_chip,
      "bytes_accessed_per_step": hbm,
      "loop_scale": scale,
      "matmul_flops_global": full,
      "xla_cost_analysis": {"flops": cost.get("flops"),
                            "bytes accessed": cost.get("bytes accessed")},
      "while_trips": program.while_trips,
      "parameter_bytes": program.parameter_bytes,
      "resident": program.resident,
      "collectives": [{"kind": c.kind, "bytes": c.bytes, "count": c.count}
                      for c in found],
      "collective_bytes_per_step": sum(c.bytes * c.count for c in found),
      "interconnect_bytes_per_chip": ici,
      **roofline(per_chip, hbm, ici, chip),
  }
