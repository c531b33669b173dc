"""The collectives of a compiled program, read from its HLO text.

Each all-reduce / all-gather / reduce-scatter / all-to-all /
collective-permute of the entry computation and of what it calls, with its
bytes (the result's) and how many times one step runs it: a collective in
a loop body runs once per iteration, and a loop's trip count is read from
its condition (`i < N`, as scans and fori_loops compile); a loop whose
count the HLO does not state counts `unknown_trips` times.
"""
from __future__ import annotations

import collections
import dataclasses
import re

KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
         "collective-permute")
DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2,
               "bf16": 2, "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8,
               "f64": 8, "c64": 8, "c128": 16}

_HEADER = re.compile(r"^(ENTRY )?%(\S+) \(.*\{$")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%\S+ = (.+?) ([a-z][a-z0-9-]*)\(")
_ARRAY = re.compile(r"\b([a-z]+[0-9]*)\[([0-9,]*)\]")
_CALLS = re.compile(
    r"\b(calls|to_apply|body|condition|true_computation|false_computation"
    r")=%([\w.\-]+)")
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")


@dataclasses.dataclass(frozen=True)
class Collective:
  kind: str
  bytes: int  # of its result, per chip
  count: int  # times one run of the program executes it


def _bytes(shape_text: str) -> int:
  total = 0
  for dtype, dims in _ARRAY.findall(shape_text):
    if dtype in DTYPE_BYTES:
      size = 1
      for d in filter(None, dims.split(",")):
        size *= int(d)
      total += size * DTYPE_BYTES[dtype]
  return total


def computations(text: str) -> tuple[str, dict[str, list[str]]]:
  """(entry name, name -> instruction lines) of an HLO module's text."""
  bodies: dict[str, list[str]] = {}
  entry, current = "", None
  for line in text.splitlines():
    header = _HEADER.match(line)
    if header:
      current = header.group(2)
      bodies[current] = []
      entry = current if header.group(1) else entry
    elif line.startswith("}"):
      current = None
    elif current is not None:
      bodies[current].append(line)
  return entry, bodies


def _trip_count(condition: list[str]) -> int | None:
  """N of a loop condition `i < N` with N a constant, else None."""
  constants = [int(m) for line in condition
               for m in re.findall(r"constant\((\d+)\)", line)]
  compares = [line for line in condition if " compare(" in line
              and "direction=LT" in line]
  return constants[0] if len(constants) == 1 and compares else None


def collectives(text: str, unknown_trips: int = 1) -> list[Collective]:
  """Every collective of the program with its count per run."""
  entry, bodies = computations(text)
  counts: collections.Counter = collections.Counter()

  def walk(name: str, times: int, depth: int) -> None:
    if depth > 64 or name not in bodies:
      return
    for line in bodies[name]:
      match = _INSTRUCTION.match(line)
      if not match:
        continue
      shape, op = match.groups()
      kind = op.removesuffix("-start")
      if kind in KINDS and not op.endswith("-done"):
        counts[(kind, _bytes(shape))] += times
      called = dict(_CALLS.findall(line))
      if op == "while":
        trips = _trip_count(bodies.get(called.get("condition", ""), []))
        walk(called["body"], times * (trips or unknown_trips), depth + 1)
        continue
      for role, callee in called.items():
        if role != "to_apply":  # a reduction's adder holds no collective
          walk(callee, times, depth + 1)
      for branches in _BRANCHES.findall(line):
        for callee in re.findall(r"%([\w.\-]+)", branches):
          walk(callee, times, depth + 1)

  walk(entry, 1, 0)
  return [Collective(kind, size, n) for (kind, size), n in
          sorted(counts.items())]


def moved_bytes(c: Collective, chips: int) -> float:
  """Bytes each chip sends for one run of `c` over `chips` (ring
  algorithms): an all-reduce 2(n-1)/n of its size, an all-gather or
  all-to-all (n-1)/n, a reduce-scatter (n-1) times its (scattered) result,
  a permute its size."""
  n = max(chips, 1)
  share = {"all-reduce": 2 * (n - 1) / n, "all-gather": (n - 1) / n,
           "all-to-all": (n - 1) / n, "reduce-scatter": n - 1,
           "collective-permute": 1.0}[c.kind]
  return share * c.bytes
