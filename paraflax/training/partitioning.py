"""Device mesh and shardings: a `data` axis over the devices, rules as data.

Parameter shardings come from `(regex, tactic)` rules matched against the
parameter path (first match wins, as in big_vision): `replicate`, or `fsdp`
(the largest axis divisible by the mesh size is split over `data`).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

DATA = "data"
TACTICS = ("replicate", "fsdp")


def _mesh(devices: list, num_devices: int, where: str) -> Mesh:
  """A one-axis mesh over the first `num_devices` of `devices` (-1: all)."""
  if num_devices > len(devices):
    raise ValueError(f"mesh.num_devices={num_devices} but only "
                     f"{len(devices)} device(s) are visible{where}.")
  n = len(devices) if num_devices in (-1, 0) else num_devices
  return Mesh(np.asarray(devices[:n]), (DATA,))


def make_mesh(num_devices: int = -1) -> Mesh:
  """A one-axis mesh over the first `num_devices` devices (-1: all)."""
  return _mesh(jax.devices(), num_devices, "")


def local_mesh(num_devices: int = -1) -> Mesh:
  """A one-axis mesh over this process's first `num_devices` devices (-1:
  all): work that each process does alone (back-translation of its
  shards) needs no collective between processes."""
  return _mesh(jax.local_devices(), num_devices, " to this process")


def config_mesh(config) -> Mesh:
  """The mesh of a config's `mesh.num_devices`."""
  return make_mesh(config.mesh.num_devices)


def _path_name(path) -> str:
  return "/".join(str(getattr(k, "key", getattr(k, "idx", k))) for k in path)


def _spec(shape: Sequence[int], tactic: str, size: int) -> P:
  if tactic == "replicate" or size == 1:
    return P()
  if tactic != "fsdp":
    raise ValueError(f"unknown sharding tactic {tactic!r}; use one of "
                     f"{TACTICS}.")
  candidates = [i for i, d in enumerate(shape) if d % size == 0]
  if not candidates:
    return P()
  axis = max(candidates, key=lambda i: shape[i])
  return P(*([None] * axis + [DATA]))


def state_shardings(abstract_state, mesh: Mesh,
                    rules: Sequence[tuple[str, str]]):
  """A sharding per leaf of `abstract_state` from the rules."""
  compiled = [(re.compile(pattern), tactic) for pattern, tactic in rules]

  def one(path, leaf):
    name = _path_name(path)
    tactic = next((t for p, t in compiled if p.search(name)), "replicate")
    return NamedSharding(mesh, _spec(getattr(leaf, "shape", ()), tactic,
                                     mesh.size))

  return jax.tree_util.tree_map_with_path(one, abstract_state)


def gathered(tree, shardings):
  """`tree` with each leaf that `shardings` splits over `data` (an `fsdp`
  rule) whole on every device, behind an optimization barrier: the
  parameters gathered once before the loss reads them, the gradients
  summed once before the optimizer splits them. Without the barrier the
  compiler moves the gathers, and the sharding of the gradients, into the
  RNNs' position loops, where they run at every position."""
  def whole(t):
    return jax.tree.map(lambda x, s: jax.lax.with_sharding_constraint(
        x, replicated(s.mesh)) if DATA in s.spec else x, t, shardings)
  if not any(DATA in s.spec for s in jax.tree.leaves(shardings)):
    return tree
  return whole(jax.lax.optimization_barrier(whole(tree)))


def replicated(mesh: Mesh) -> NamedSharding:
  return NamedSharding(mesh, P())


def batch_sharding(mesh: Mesh, axis: int) -> NamedSharding:
  """Batches are split over `data` along their `axis`."""
  return NamedSharding(mesh, P(*([None] * axis + [DATA])))


def put_batch(batch: dict[str, np.ndarray], mesh: Mesh, axis: int,
              local: bool = False) -> dict[str, jax.Array]:
  """Places a global host batch, each process contributing its own slice;
  `local`: `batch` is already this process's slice (its block of rows, in
  process order) of a batch `process_count()` times as long."""
  sharding = batch_sharding(mesh, axis)
  count, index = jax.process_count(), jax.process_index()

  def one(x: np.ndarray) -> jax.Array:
    shape = list(x.shape)
    shape[axis] *= count if local else 1
    if shape[axis] % mesh.size:
      raise ValueError(f"batch axis {axis} of size {shape[axis]} does not "
                       f"divide over {mesh.size} devices; pad the batch.")
    mine = x if local else np.array_split(x, count, axis=axis)[index]
    return jax.make_array_from_process_local_data(sharding, mine,
                                                  tuple(shape))

  return {k: one(v) for k, v in batch.items()}


def process() -> tuple[int, int]:
  """(index, count) of this process in the run."""
  return jax.process_index(), jax.process_count()


def put_global(x: np.ndarray, sharding: NamedSharding) -> jax.Array:
  """A host array that every process holds in full (inference inputs),
  placed by `sharding`: each process hands over only its devices' part."""
  return jax.make_array_from_callback(x.shape, sharding, lambda i: x[i])


def fetch(tree):
  """`jax.device_get`, also of arrays split over several processes (each
  process gets the whole value)."""
  if all(getattr(a, "is_fully_addressable", True)
         for a in jax.tree.leaves(tree)):
    return jax.device_get(tree)
  from jax.experimental import multihost_utils  # pylint: disable=g-import-not-at-top
  return multihost_utils.process_allgather(tree, tiled=True)

