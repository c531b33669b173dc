"""Orbax checkpoints in a workdir: keep-last-k for resuming, best for use.

`<workdir>/checkpoints` holds the last k states (a restarted job resumes from
the newest); `<workdir>/best` holds the state with the best selection metric,
which `embed` and `eval-sts` load.

The regular checkpoint of a step is its commit point: the loop writes a
step's metrics and best checkpoint first, and a resumed run removes best
checkpoints newer than the step it resumes from (a killed run left them
uncommitted), then redoes them, so a kill between any two writes resumes
into the state of an uninterrupted run.
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np
import orbax.checkpoint as ocp

from paraflax import errors
from paraflax import faults
from paraflax.errors import NoCheckpointError

LATEST, BEST = "checkpoints", "best"
# Tensorstore, under orbax, reports a failed write as a ValueError with the
# OS error in its text; as an OSError it gets the command line's message and
# fix (a full disk: free space, rerun, the run resumes).
_OS_ERROR_CODE = re.compile(r"\[os_error_code='(\d+)'\]")


@contextlib.contextmanager
def _os_errors(folder: str | os.PathLike) -> Iterator[None]:
  try:
    yield
  except ValueError as e:
    found = _OS_ERROR_CODE.search(str(e))
    if found is None:
      raise
    code = int(found.group(1))
    raise OSError(code, os.strerror(code), str(folder)) from e


def _restore(manager: ocp.CheckpointManager, step: int,
             abstract_state: Any) -> Any:
  """The state of `step`; a checkpoint that cannot be read is one message
  naming its folder and the fix, not the tensorstore traceback."""
  folder = os.path.join(str(manager.directory), str(step))
  try:
    with _os_errors(folder):
      return manager.restore(step, args=ocp.args.StandardRestore(
          abstract_state))
  except OSError:
    raise
  except Exception as e:  # orbax and tensorstore raise many kinds
    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    raise errors.DataError(
        f"{folder}: this checkpoint cannot be read ({first[:200]}). It is "
        "damaged (edited, copied in part, or written to a full disk): "
        "remove that folder to resume from an earlier checkpoint, or train "
        "again in a new workdir.") from e


def _manager(workdir: str, kind: str, *, keep: int = 1,
             best_metric: str | None = None, create: bool = True
             ) -> ocp.CheckpointManager:
  options = ocp.CheckpointManagerOptions(
      # A writer clears the temp folders of saves that a kill interrupted.
      max_to_keep=keep, create=create, cleanup_tmp_directories=create,
      best_fn=(lambda m: m[best_metric]) if best_metric else None,
      best_mode="max",
      # A best state must be on disk before the regular checkpoint of its
      # step commits it.
      enable_async_checkpointing=kind != BEST)
  return ocp.CheckpointManager(os.path.join(os.path.abspath(workdir), kind),
                               options=options)


class Checkpoints:
  """Saving and restoring the train state of one run."""

  def __init__(self, workdir: str, keep: int, best_metric: str | None):
    self.latest = _manager(workdir, LATEST, keep=keep)
    self.best = _manager(workdir, BEST, best_metric=best_metric) \
        if best_metric else None
    self.best_metric = best_metric
    self._drop_uncommitted_best()

  def _drop_uncommitted_best(self) -> None:
    resumed = self.latest_step() or 0
    for step in self.best.all_steps() if self.best else ():
      if step > resumed:
        logging.info("best checkpoint %d is newer than the step %d this run "
                     "resumes from; it is redone", step, resumed)
        self.best.delete(step)

  def latest_step(self) -> int | None:
    return self.latest.latest_step()

  def restore_latest(self, abstract_state: Any) -> Any:
    return _restore(self.latest, self.latest.latest_step(), abstract_state)

  def save(self, step: int, state: Any) -> None:
    with _os_errors(self.latest.directory):
      self.latest.save(step, args=ocp.args.StandardSave(state), force=True)
    faults.moment("checkpoint.saved")

  def save_if_best(self, step: int, state: Any, metrics: dict[str, float]
                   ) -> None:
    if self.best is not None and self.best_metric in metrics:
      with _os_errors(self.best.directory):
        self.best.save(step, args=ocp.args.StandardSave(state), force=True,
                       metrics={self.best_metric: float(
                           metrics[self.best_metric])})
      faults.moment("best.saved")

  def close(self) -> None:
    for manager in (self.latest, self.best):
      if manager is not None:
        with _os_errors(manager.directory):
          manager.wait_until_finished()
        manager.close()


def _on_this_host(abstract_state: Any) -> Any:
  """Leaves without a sharding restore onto this process's first device,
  so that a checkpoint written by several processes (hosts) loads on one."""
  device = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
  return jax.tree.map(
      lambda a: a if getattr(a, "sharding", None) is not None
      else jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=device),
      abstract_state)


def _as_saved(manager: ocp.CheckpointManager, step: int) -> Any:
  """The abstract state a checkpoint holds, from its metadata."""
  reader = ocp.CheckpointManager(
      manager.directory, options=ocp.CheckpointManagerOptions(create=False),
      item_handlers=ocp.StandardCheckpointHandler())
  saved = reader.item_metadata(step)
  reader.close()
  return jax.tree.map(lambda m: jax.ShapeDtypeStruct(m.shape, m.dtype),
                      getattr(saved, "tree", saved))


def restore_for_inference(workdir: str, abstract_state: Any | None
                          ) -> tuple[Any, int]:
  """The best state of a workdir if there is one, else the newest; None:
  the state as saved (its shapes from the checkpoint's metadata)."""
  for kind in (BEST, LATEST):
    if not os.path.isdir(os.path.join(workdir, kind)):
      continue
    manager = _manager(workdir, kind, create=False)
    step = (manager.best_step() if kind == BEST else None) \
        or manager.latest_step()
    if step is not None:
      state = _restore(manager, step, _on_this_host(
          _as_saved(manager, step) if abstract_state is None
          else abstract_state))
      manager.close()
      return state, step
    manager.close()
  raise NoCheckpointError(
      f"{workdir}: no checkpoint (looked in {workdir}/{BEST} and "
      f"{workdir}/{LATEST}). Train first: paraflax train --config "
      f"configs/gran.py --workdir {workdir}")


def restore_params_only(workdir: str, init_params: Callable[[jax.Array], Any]
                        ) -> tuple[Any, int]:
  """The parameters of `restore_for_inference` and their step, read as the
  checkpoint saved them: a model that only infers needs no optimizer to
  say what its checkpoint holds. The shapes must be `init_params(key)`'s
  (traced, not run)."""
  state, step = restore_for_inference(workdir, None)
  expected = jax.eval_shape(init_params, jax.random.key(0))
  shapes = lambda tree: jax.tree.map(lambda a: (a.shape, str(a.dtype)), tree)
  if shapes(expected) != shapes(state["params"]):
    raise errors.DataError(
        f"{workdir}: its checkpoint's parameters do not match the model of "
        "its config.json (edited since training?): restore that config or "
        "train again in a new workdir.")
  return state["params"], step


def params_digest(params: Any) -> str:
  """sha256 of every parameter's dtype, shape and bytes: which checkpoint
  an output was made with, whatever its workdir is called."""
  digest = hashlib.sha256()
  for leaf in jax.tree.leaves(jax.device_get(params)):
    leaf = np.asarray(leaf)
    digest.update(f"{leaf.dtype}{leaf.shape}".encode() + leaf.tobytes())
  return digest.hexdigest()
