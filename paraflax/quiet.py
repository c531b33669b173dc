"""TensorFlow loaded without its C++ start-up lines.

TensorFlow prints `oneDNN custom operations are on`, `Could not find cuda
drivers` and, on a machine without a GPU, `failed call to cuInit` straight
to file descriptor 2 while it loads, before any log level it reads applies.
A user reads an error where nothing is wrong, so the load runs with the
descriptor pointed at /dev/null, unless `paraflax --verbose` (which sets
`VERBOSE_ENV`) asks for everything. On a host with libtpu installed but no
TPU, jax is kept from starting libtpu, which prints errors of its own.
"""
from __future__ import annotations

import collections
import contextlib
import functools
import glob
import importlib.util
import os
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

VERBOSE_ENV = "PARAFLAX_VERBOSE"


@contextlib.contextmanager
def native_stderr_silenced() -> Iterator[None]:
  if os.environ.get(VERBOSE_ENV):
    yield
    return
  sys.stderr.flush()
  saved = os.dup(2)
  devnull = os.open(os.devnull, os.O_WRONLY)
  try:
    os.dup2(devnull, 2)
    yield
  finally:
    os.dup2(saved, 2)
    os.close(saved)
    os.close(devnull)


@contextlib.contextmanager
def native_stderr_once() -> Iterator[None]:
  """What native code writes to stderr inside, each distinct line shown
  once with its count: faiss warns once per k-means run, so an OPQ
  training prints one warning more than a thousand times."""
  sys.stderr.flush()
  saved = os.dup(2)
  with tempfile.TemporaryFile() as captured:
    try:
      os.dup2(captured.fileno(), 2)
      yield
    finally:
      os.dup2(saved, 2)
      os.close(saved)
      captured.seek(0)
      lines = captured.read().decode("utf-8", "replace").splitlines()
      for line, n in collections.Counter(lines).items():
        print(line if n == 1 else f"{line} ({n:,} times)", file=sys.stderr)


def quiet_native_logs() -> None:
  """C++ warnings off for the whole process, unless `VERBOSE_ENV`: jax and
  TensorFlow share absl's log threshold, read once by whichever loads
  first, so it is set before either. Else jax loaded first lets
  TensorFlow print a data error's PyFunc traceback (100 lines) before
  paraflax's message of it."""
  if not os.environ.get(VERBOSE_ENV):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  keep_jax_off_libtpu()


def keep_jax_off_libtpu() -> None:
  """jax's platform set to the CPU on a host with libtpu but no TPU chip and
  no GPU, unless JAX_PLATFORMS names one: jax would start libtpu to look for
  a TPU, which prints init errors (TPU_WORKER_HOSTNAMES, host bounds) and
  holds /tmp/libtpu_lockfile while the process runs. The `tpu` extra brings
  libtpu to CPU hosts for `paraflax compile`, whose compile-only client needs
  neither. jax reads the variable when it is imported, so this runs first."""
  if "JAX_PLATFORMS" not in os.environ and cpu_only_host_with_libtpu():
    os.environ["JAX_PLATFORMS"] = "cpu"


# PCI vendor of Google's TPU chips, and the device files of NVIDIA (Linux,
# containers, WSL2) and AMD GPUs: what jax itself probes (hardware_utils),
# read here because importing jax's module would import jax on every
# command, --help's and the data commands' too.
_GOOGLE_PCI_VENDOR = "0x1ae0"
_GPU_DEVICE_FILES = ("/dev/nvidia0", "/dev/nvidiactl", "/dev/dxg", "/dev/kfd")


def cpu_only_host_with_libtpu() -> bool:
  """libtpu is installed, and this host has no TPU chip and no GPU."""
  if importlib.util.find_spec("libtpu") is None:
    return False
  if any(os.path.exists(f) for f in _GPU_DEVICE_FILES):
    return False
  for vendor in glob.glob("/sys/bus/pci/devices/*/vendor"):
    with open(vendor, encoding="ascii") as f:
      if f.read().strip() == _GOOGLE_PCI_VENDOR:
        return False
  return True


@functools.cache
def tensorflow() -> Any:
  """The `tensorflow` module, loaded quietly, with no GPU visible to it: it
  only feeds data and must not take accelerator memory from JAX."""
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  with native_stderr_silenced():
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    tf.config.set_visible_devices([], "GPU")
  return tf
