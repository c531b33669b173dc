"""Markdown table lines, shared by the table modules of lab/tools/."""
from __future__ import annotations


def row(cells) -> str:
  return "| " + " | ".join("" if c is None else str(c) for c in cells) + " |"


def header(columns, align=None) -> list[str]:
  """The header line and the alignment line; `align` has "---" (left) or
  "---:" (right) per column, all left when None."""
  return [row(columns), row(align or ["---"] * len(columns))]


def table(columns, rows, numeric_from: int | None = None) -> list[str]:
  """Header, alignment and rows; columns from `numeric_from` on are
  right-aligned (None: none)."""
  n = len(columns) if numeric_from is None else numeric_from
  return header(columns, ["---"] * n + ["---:"] * (len(columns) - n)) + [
      row(r) for r in rows]


def bold_if(cell: str, best: bool) -> str:
  """`cell`, in bold where it is the best of its row or column."""
  return f"**{cell}**" if best else cell


def num(x, digits: int = 2) -> str:
  return "" if x is None else f"{x:,.{digits}f}"


def span(values, digits: int = 2, unit: str = "x") -> str:
  """The least and the most of `values` ("1.60-1.74x"), one figure where
  they round alike."""
  lo, hi = f"{min(values):.{digits}f}", f"{max(values):.{digits}f}"
  return f"{lo}{unit}" if lo == hi else f"{lo}-{hi}{unit}"


def slower(ratio_cell: str, ratios) -> str:
  """A cell of ours / peer that says so where ours is the slower."""
  if max(ratios) < 1:
    return ratio_cell + " (ours slower)"
  return ratio_cell + (" (ours slower in some)" if min(ratios) < 1 else "")


# The CPU of a hardware name of lab/benchmarks/README.md.
CPU_KINDS = {"amd-epyc-2core": "AMD EPYC", "intel-xeon-2core": "Intel Xeon"}


# Generations that one hardware name covers, by the "family F, model M" of
# children.cpu_id: hosts of two generations are lent under each name, and
# their vector units differ (Zen 4 splits each AVX-512 operation into two
# 256-bit halves, Zen 5 does not), so a table says which one ran. The
# Intel names are those Linux's intel-family.h gives the model.
GENERATIONS = {"family 26, model 2": "Zen 5", "family 25, model 17": "Zen 4",
               "family 6, model 167": "Rocket Lake",
               "family 6, model 207": "Emerald Rapids"}


def cpu_cell(hardware: str, cores: int, cpu_id: str | None = None) -> str:
  generation = GENERATIONS.get((cpu_id or "").rpartition(",")[0])
  return (f"{CPU_KINDS.get(hardware, hardware)}"
          f"{f' ({generation})' if generation else ''}, {cores} "
          f"core{'s' if cores > 1 else ''}")


def machine(hardware: dict) -> tuple[str, str]:
  """The CPU kind and generation children.run_facts recorded: the hardware
  name and the CPU id. As a sort key it puts the AMD EPYC first and each
  kind's generations in CPU-id order."""
  return hardware["name"], hardware.get("cpu_id") or ""


def recorded_cpu_cell(hardware: dict, cores: int | None = None) -> str:
  """The CPU cell of the hardware children.run_facts recorded; `cores`
  where the run used fewer than the machine has."""
  return cpu_cell(hardware["name"], hardware["cores"] if cores is None
                  else cores, hardware.get("cpu_id"))


def named_cpu_cell(path: str, result: dict) -> str:
  """The CPU cell of result file NAME.HOST.json: the hardware it records,
  else the host its name gives (the lab's naming rule) for files kept
  before children.run_facts, which record none of their own."""
  hardware = result.get("hardware")
  if isinstance(hardware, dict):
    return recorded_cpu_cell(hardware)
  return cpu_cell(path.split(".")[-2], result["cpu_count"])


def hardware_cell(result: dict) -> str:
  """A result file's CPU and its 1-minute load at the start; files kept
  before children.run_facts record at most the core count."""
  load = (result.get("load_average") or result.get("loadavg_start")
          or [result.get("load_average_1min", {}).get("start")])
  load = f", load {load[0]:.1f}" if load[0] is not None else ""
  hardware = result.get("hardware")
  if isinstance(hardware, dict):
    return recorded_cpu_cell(hardware) + load
  cores = (result.get("cpu_count") or result.get("cpus")
           or (result.get("results") or [{}])[0].get("cpu_count"))
  return f"{cores} cores, CPU not recorded{load}" if cores \
      else f"CPU not recorded{load}"
