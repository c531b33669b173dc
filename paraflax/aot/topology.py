"""The devices a program is compiled for: a TPU topology or this host's.

A TPU topology (`v5e:16x16`, `v4:2x2x1`) comes from libtpu's compile-only
client: its devices can be put in a `Mesh` and compiled for on a host with
no TPU; nothing can run on them.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import re
from typing import Any

from paraflax import errors
from paraflax import quiet
from paraflax.aot import chips

# Chip kinds with a compile-only client, and their topology shapes (chips
# per axis: 2 axes for the lite chips' 2D tori, 3 for v4 / v5p's 3D).
TPU_KINDS = {"v4": 3, "v5e": 2, "v5p": 3, "v6e": 2}
LOCAL = "local"
EXAMPLES = "v5e:2x2, v5e:4x4, v5e:16x16, v4:2x2x1, v4:2x2x4, v5p:2x2x1, v6e:4x4"
INSTALL = "pip install -e '.[tpu]' (libtpu, from the package registry)"


@dataclasses.dataclass(frozen=True)
class Target:
  name: str  # as given: "v5e:16x16" or "local"
  devices: list[Any]
  chip: chips.Chip | None  # None: a CPU or an unlisted accelerator
  compile_only: bool
  # Devices per chip: v4's two TensorCores are two devices of one chip,
  # sharing its HBM; the other chips are one device each.
  cores_per_chip: int = 1

  @property
  def chips(self) -> int:
    return len(self.devices) // self.cores_per_chip


def _known_forms() -> str:
  kinds = ", ".join(f"{k} ({n} axes)" for k, n in TPU_KINDS.items())
  return (f"KIND:AxB[xC] with KIND one of {kinds}, e.g. {EXAMPLES}; or "
          f"'{LOCAL}' for this host's own devices")


def _parse(name: str) -> tuple[str, tuple[int, ...]]:
  match = re.fullmatch(r"([a-z0-9]+):(\d+(?:x\d+)*)", name)
  if not match or match.group(1) not in TPU_KINDS:
    raise errors.ConfigError(f"--topology {name!r} is not a known form: "
                             f"{_known_forms()}.")
  kind, shape = match.group(1), tuple(int(d) for d in
                                      match.group(2).split("x"))
  if len(shape) != TPU_KINDS[kind] or min(shape) < 1:
    raise errors.ConfigError(
        f"--topology {name!r}: a {kind} topology has {TPU_KINDS[kind]} "
        f"axes of at least 1 chip; known forms: {_known_forms()}.")
  return kind, shape


def _tpu_devices(name: str) -> list[Any]:
  if importlib.util.find_spec("libtpu") is None:
    raise errors.ConfigError(
        f"--topology {name} needs libtpu's compile-only client, which is "
        f"not installed: {INSTALL}; or use --topology {LOCAL}.")
  from jax.experimental import topologies  # pylint: disable=g-import-not-at-top
  try:
    # libtpu warns on stderr that this host is no TPU VM: true, and meant.
    with quiet.native_stderr_silenced():
      return list(topologies.get_topology_desc(
          platform="tpu", topology_name=name).devices)
  except Exception as e:  # pylint: disable=broad-except
    # libtpu's own refusal (a shape the chip does not come in).
    raise errors.ConfigError(
        f"--topology {name}: libtpu refuses it ({str(e).splitlines()[0]}); "
        f"known forms: {_known_forms()}.") from None


def target(name: str) -> Target:
  """The devices of `name`: a TPU topology or `local`."""
  import jax  # pylint: disable=g-import-not-at-top
  if name == LOCAL:
    devices = jax.devices()
    return Target(name, devices, chips.of_device_kind(devices[0].device_kind),
                  compile_only=False)
  kind, _ = _parse(name)
  devices = _tpu_devices(name)
  cores = len({getattr(d, "core_on_chip", 0) for d in devices})
  return Target(name, devices, chips.CHIPS[kind], compile_only=True,
                cores_per_chip=cores)
