"""Matrix-multiply FLOPs of a program, loops counted as they run.

XLA's `cost_analysis` counts a loop body once, whatever its trip count:
an RNN over 64 positions, a scan over a megabatch's 40 updates, a beam
search's steps would be counted as one. Here the program's jaxpr is
walked instead: each `dot_general` costs 2 x (output elements) x
(contracted size), a scan's body counts `length` times and a while loop's
`while_trips` times (its bound: a search's longest output). Elementwise
work is left out; in these models it is a few percent of the matmuls'.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import jax
from jax.extend import core as jax_core


def _dot_flops(eqn) -> int:
  lhs, rhs = (v.aval for v in eqn.invars)
  (contract, _), _ = eqn.params["dimension_numbers"]
  contracted = math.prod(lhs.shape[d] for d in contract)
  out = eqn.outvars[0].aval
  del rhs
  return 2 * math.prod(out.shape) * contracted


def _sub_jaxprs(params: dict[str, Any]):
  for value in params.values():
    for item in value if isinstance(value, (tuple, list)) else (value,):
      inner = getattr(item, "jaxpr", item)
      if isinstance(inner, jax_core.Jaxpr):
        yield inner


def _count(jaxpr, while_trips: int) -> tuple[int, int]:
  """(FLOPs with loops as they run, FLOPs with each body once)."""
  full = once = 0
  for eqn in jaxpr.eqns:
    name = eqn.primitive.name
    if name == "dot_general":
      flops = _dot_flops(eqn)
      full, once = full + flops, once + flops
      continue
    times = {"scan": eqn.params.get("length", 1),
             "while": while_trips}.get(name, 1)
    subs = list(_sub_jaxprs(eqn.params))
    if name == "cond":  # one branch runs: the costliest counts
      subs = subs and [max(subs, key=lambda j: _count(j, while_trips)[0])]
    for sub in subs:
      f, o = _count(sub, while_trips)
      full, once = full + times * f, once + o
  return full, once


def matmul_flops(fn: Callable, *args: Any, while_trips: int = 1
                 ) -> tuple[int, int]:
  """(global FLOPs of one call of `fn` on abstract `args`, loops as they
  run; the same with every loop body once, as XLA counts)."""
  closed = jax.make_jaxpr(fn)(*args)
  return _count(closed.jaxpr, while_trips)
