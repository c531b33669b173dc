"""Both directions' top-k of a similarity tile by our own XLA:CPU kernel.

`tile_top_k.cc` reads a tile once for the rows' and the columns' top-k,
where XLA:CPU reads it once per reduction and runs each top-k and gather as
an op of its own (`tile_top_k.row_top_k`, `tile_top_k.column_top_k`): for
an [8192, 7168] tile at d = 256 those took 37 ms beside a 66-ms product,
the kernel 12 (lab/benchmarks/README.md, "Both top-k by a kernel of our own"). It is
built from its source with the host's C++ compiler on first use, like a
compiled program in `compile_cache`: into
`PARAFLAX_NATIVE_CACHE` (default `~/.cache/paraflax/native`, `off`: never
built), one file per source, jaxlib and CPU, written whole or not at all (one
that no process loaded for 30 days goes at the next build).
Where it cannot be built (no compiler, the cache off or read-only) the
search keeps XLA's ops, with one warning; results are the same either way.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import logging
import os
import shlex
import subprocess
import tempfile

import jax
import jax.numpy as jnp
import jaxlib
import numpy as np
from jax import lax

from paraflax import compile_cache
from paraflax import files

ENV = "PARAFLAX_NATIVE_CACHE"
_SOURCE = os.path.join(os.path.dirname(__file__), "tile_top_k.cc")
_TARGET = "paraflax_both_top_k"
# The host's own instruction set first (the scan's compares are vectors of
# its width); a compiler without -march=native gets the portable build.
_FLAGS = (("-O3", "-march=native"), ("-O3",))
_COMMON = ("-std=c++17", "-shared", "-fPIC", "-w")
_registered = False  # whether _TARGET has its handler in this process
# Each source edit, jaxlib, compiler and CPU gets a build of its own (~85
# KB); one that no process has loaded for this long goes at the next build.
UNUSED_SECONDS = 30 * 24 * 3600


def _compiler() -> list[str]:
  return shlex.split(os.environ.get("CXX", "c++"))


def _library_path(folder: str, source: bytes) -> str:
  """Where the build of `source` for this jaxlib and CPU lives."""
  key = hashlib.sha256(source + jaxlib.__version__.encode() +
                       compile_cache.host_key().encode() +
                       " ".join(_compiler()).encode()).hexdigest()[:16]
  return os.path.join(folder, f"tile_top_k-{key}.so")


def _build(target: str) -> None:
  """Compiles the kernel into `target`, renamed into place whole."""
  folder = os.path.dirname(target)
  os.makedirs(folder, exist_ok=True)
  files.remove_stale_temporaries(folder)
  files.remove_older(folder, "tile_top_k-*.so", UNUSED_SECONDS)
  errors = []
  for flags in _FLAGS:
    fd, temporary = tempfile.mkstemp(prefix=".tmp-", suffix=".so",
                                     dir=folder)
    os.close(fd)
    command = [*_compiler(), *flags, *_COMMON, f"-I{jax.ffi.include_dir()}",
               _SOURCE, "-o", temporary]
    try:
      done = subprocess.run(command, capture_output=True, text=True,
                            check=False)
      if done.returncode == 0:
        os.replace(temporary, target)
        return
      errors.append(f"{shlex.join(command)}: {done.stderr.strip()[-500:]}")
    finally:
      if os.path.exists(temporary):
        os.remove(temporary)
  raise OSError("; ".join(errors))


@functools.cache
def available() -> bool:
  """Whether the kernel is built (now, if needed), loaded and registered
  with XLA:CPU; False, with a warning, where it cannot be."""
  folder = files.user_cache(ENV, "native")
  if folder is None:
    return False
  with open(_SOURCE, "rb") as f:
    target = _library_path(folder, f.read())
  try:
    if not os.path.exists(target):
      logging.info("building the mining kernel into %s (once per source, "
                   "jaxlib and CPU)", target)
      _build(target)
    with contextlib.suppress(OSError):  # a cache shared read-only
      os.utime(target)  # used now: removed last
    library = ctypes.cdll.LoadLibrary(target)
  except OSError as e:  # no compiler, a read-only cache, a failed build
    logging.warning("mining keeps XLA's top-k (%s=%s): the kernel %s was "
                    "not built: %s", ENV, folder, _SOURCE, e)
    return False
  _register(library)
  return True


def _register(library: ctypes.CDLL) -> None:
  """Registers the kernel of `library` under _TARGET, unless this process
  already has: XLA takes one handler per name for the life of a process
  (a second library, built into another cache folder, is the same code)."""
  global _registered
  if not _registered:
    jax.ffi.register_ffi_target(_TARGET, jax.ffi.pycapsule(library.BothTopK),
                                platform="cpu")
    _registered = True


def both_top_k(s_QxC: jax.Array, n_ok: jax.Array, q_ok: jax.Array,
               floor_Q: jax.Array, row_k: int, col_k: int, workers: int
               ) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
  """The top row_k of each row over its first n_ok columns, above
  floor_Q (the rest count as -inf), and the top col_k of each column over
  its first q_ok rows: values and positions as `lax.top_k`'s, by `workers`
  threads of XLA's pool. Call only where `available()` and on the CPU."""
  rows, cols = s_QxC.shape
  shapes = ((rows, row_k), (rows, row_k), (cols, col_k), (cols, col_k))
  dtypes = (jnp.float32, jnp.int32, jnp.float32, jnp.int32)
  outputs = jax.ffi.ffi_call(_TARGET, tuple(
      jax.ShapeDtypeStruct(shape, dtype)
      for shape, dtype in zip(shapes, dtypes)))(
          s_QxC, jnp.asarray(n_ok, jnp.int32), jnp.asarray(q_ok, jnp.int32),
          floor_Q.astype(jnp.float32), workers=np.int64(workers))
  # Inside shard_map the results vary over the mesh axes the tile varies
  # over; ffi_call types them as the same on every device.
  axes = tuple(jax.typeof(s_QxC).manual_axis_type.varying)
  return tuple(lax.pcast(a, axes, to="varying") if axes else a
               for a in outputs)
