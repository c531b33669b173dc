"""Process-wide settings of the host's memory allocator.

XLA:CPU allocates each execution's temporary buffers afresh. glibc hands an
allocation that large (a [8192, 7168] similarity tile is 235 MB) to mmap, or
serves it from a per-thread arena that must mmap it anyway, and unmaps it on
free: the next execution touches new zero pages, one page fault per 4 KiB.
Measured on one query block of 50k mining (d = 256, 2 cores): 64k faults on
1 device and 431k on 8 simulated devices (each holds its own tile), 0.6 s of
kernel time per block there, which made 8 devices 1.4x slower than 1 in CPU
time. With freed memory kept (one arena, no mmap, no trimming) both ran
with no faults and in the same CPU time.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools

# mallopt(3) parameters, from glibc's malloc.h.
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8
_SETTINGS = ((_M_ARENA_MAX, 1),  # threads share the arena that never mmaps
             (_M_MMAP_MAX, 0),  # large blocks come from the heap
             (_M_TRIM_THRESHOLD, 2**31 - 1))  # and stay there once freed


@functools.cache
def keep_freed_memory() -> bool:
  """Freed memory stays mapped for the next allocation of this process;
  False where the C library is not glibc (nothing changed). Call it before
  jax runs anything: threads that already hold their own arena keep it.
  Memory is not given back before the process ends, and a freed block is
  reused only where the next one fits: the peak RSS can grow (50k mining,
  d = 512: 1.6 GB against 1.4 GB)."""
  name = ctypes.util.find_library("c")
  try:
    mallopt = ctypes.CDLL(name).mallopt
  except (OSError, AttributeError, TypeError):  # no libc, or not glibc
    return False
  return all(mallopt(param, value) == 1 for param, value in _SETTINGS)
