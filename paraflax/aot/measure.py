"""A compiled program run on this host's own devices, timed: the measured
step time beside the roofline projection of `analysis.py`.

The arguments are zeros of the program's abstract shapes (a key for a
PRNG key), placed by their shardings; a program that donates its first
argument (a train step's state, the LSH sums) gets its first output back
at the next call, as the real loop feeds it.
"""
from __future__ import annotations

import time
from typing import Any

import jax
import jax.numpy as jnp


def _concrete(struct: jax.ShapeDtypeStruct) -> jax.Array:
  if jax.dtypes.issubdtype(struct.dtype, jax.dtypes.prng_key):
    value = jax.random.key(0)
  else:
    value = jnp.zeros(struct.shape, struct.dtype)
  return jax.device_put(value, struct.sharding)


def seconds_per_call(compiled, args: tuple, calls: int,
                     feeds_back: bool) -> float:
  """Mean wall seconds of `calls` calls after one warm-up call."""
  args = list(jax.tree.map(_concrete, args))

  def call() -> Any:
    out = compiled(*args)
    if feeds_back:
      args[0] = out[0] if isinstance(out, tuple) else out
    return out

  jax.block_until_ready(call())
  start = time.perf_counter()
  for _ in range(calls):
    out = call()
  jax.block_until_ready(out)
  return (time.perf_counter() - start) / calls


def report(result: dict[str, Any], seconds: float) -> dict[str, Any]:
  """The measured figures, and the projection's error where there is one."""
  projected = result.get("projected_step_seconds")
  return {"measured_step_seconds": seconds,
          "measured_steps_per_second": 1 / seconds,
          "achieved_flops_per_second_per_chip":
              result["flops_per_step"] / seconds,
          "measured_over_projected": (seconds / projected
                                      if projected else None)}
