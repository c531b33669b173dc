"""Freed memory kept for the next allocation, in a fresh process each."""
import subprocess
import sys

import pytest

# 256 MB from malloc, filled, freed, and allocated and filled again: page
# faults of the second fill. (Not numpy: it asks for huge pages.)
_CODE = """
import ctypes, ctypes.util, resource, sys
from paraflax import host
if sys.argv[1] == "keep":
  assert host.keep_freed_memory()
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
def fill():
  block = libc.malloc(2**28)
  ctypes.memset(block, 1, 2**28)
  libc.free(block)
fill()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
fill()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
  out = subprocess.run([sys.executable, "-c", _CODE, mode], check=True,
                       capture_output=True, text=True).stdout
  return int(out.split()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc")
def test_a_freed_block_is_reused_without_page_faults():
  # 256 MB is 65,536 pages of 4 KiB.
  assert _faults("default") > 30_000
  assert _faults("keep") < 1_000
