"""Waits for the load of work before a timed command to decay, so that its
clock starts on idle cores: lab/run.py before a benchmark, tools/rerun.py
before each command of a collected run and of what it needs."""
from __future__ import annotations

import os
import sys
import time

# The 1-minute load average under this (2 idle cores sit near 0.1), or
# the longest wait (other jobs on the machine: the timed result records
# the load).
_SETTLED_LOAD, _SETTLE_MAX_S, _SETTLE_POLL_S = 0.5, 180.0, 15.0


def settle() -> float:
  """Waits until the 1-minute load is under _SETTLED_LOAD, at most
  _SETTLE_MAX_S; returns the load it starts at."""
  deadline = time.monotonic() + _SETTLE_MAX_S
  while ((load := os.getloadavg()[0]) >= _SETTLED_LOAD
         and time.monotonic() < deadline):
    print(f"the load is {load:.1f}; timing starts below "
          f"{_SETTLED_LOAD} (at most {_SETTLE_MAX_S:.0f} s)", file=sys.stderr)
    time.sleep(_SETTLE_POLL_S)
  return load
