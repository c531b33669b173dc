"""One train loop for every model.

A model family plugs in through a `Recipe`: how to initialise the state, the
pure train step (jitted here with shardings), the host batches from a given
step on, and an evaluation. The loop owns the rest: checkpoints and
auto-resume, metrics, progress, the NaN guard and PRNG keys from the seed;
the mesh comes from the caller, which built the recipe on the same one.
"""
from __future__ import annotations

import contextlib
import logging
import math
import queue
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import jax
import numpy as np
import optax
import tqdm
from jax.sharding import Mesh

from paraflax import errors
from paraflax.training import checkpointing
from paraflax.training import distributed
from paraflax.training import metrics as metrics_lib
from paraflax.training import partitioning

State = dict[str, Any]  # {"step", "params", "opt", ...}


class Recipe(Protocol):
  updates_per_call: int  # optimizer updates one train_step call makes
  batch_axis: int  # the axis of every batch array split over `data`
  # `batches` yields each process's own rows of a global batch (it reads
  # no other process's), not the whole batch.
  local_batches: bool
  select_metric: str | None  # evaluation value that picks the best state

  def init_state(self, key: jax.Array) -> State: ...

  def train_step(self, state: State, batch: dict[str, jax.Array],
                 key: jax.Array) -> tuple[State, dict[str, jax.Array]]: ...

  def batches(self, start_step: int) -> Iterator[dict[str, np.ndarray]]: ...

  def evaluate(self, params: Any) -> dict[str, float]: ...


def _check_finite(step: int, values: dict[str, float], last_saved: int | None
                  ) -> None:
  bad = {k: v for k, v in values.items() if not math.isfinite(v)}
  if bad:
    raise errors.TrainingDiverged(
        f"non-finite {bad} at step {step}. The last good checkpoint is step "
        f"{last_saved}; lower optimizer.learning_rate or check the data, then "
        "rerun (it resumes from that checkpoint).")


def _every(step: int, interval: int, last: int) -> bool:
  return step == last or (interval > 0 and step % interval == 0)


def state_shardings(recipe: Recipe, config: Any, mesh) -> tuple[Any, Any]:
  """The abstract train state and a sharding per leaf, from the rules."""
  abstract = jax.eval_shape(recipe.init_state, jax.random.key(0))
  return abstract, partitioning.state_shardings(
      abstract, mesh, [tuple(r) for r in config.partitioning.rules])


# While `jit_train_step` traces a step: its parameters' shardings, for
# `gradient_step` to sum whole the gradients of those an fsdp rule splits.
_SPLIT_PARAMS: list[Any] = []


def gradient_step(tx: optax.GradientTransformation, loss_fn: Callable,
                  state: State, batch: Any) -> tuple[State, Any, Any, Any]:
  """One optimizer update of `state` ({step, params, opt}) on
  `loss_fn(params, batch) -> (loss, aux)`; returns the new state, loss, aux
  and gradient norm."""
  (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(
      state["params"], batch)
  for shardings in _SPLIT_PARAMS:
    grads = partitioning.gathered(grads, shardings)
  updates, opt = tx.update(grads, state["opt"], state["params"])
  return (dict(state, step=state["step"] + 1, opt=opt,
               params=optax.apply_updates(state["params"], updates)),
          loss, aux, optax.tree.norm(grads))


def jit_train_step(recipe: Recipe, mesh, shardings):
  """`recipe.train_step` jitted with the state and batch shardings; the
  parameters that an `fsdp` rule splits are gathered whole once, before
  the step reads them, and their gradients summed whole once, before the
  optimizer splits them (`partitioning.gathered`)."""
  def step(state, batch, key):
    _SPLIT_PARAMS.append(shardings["params"])
    try:
      return recipe.train_step(dict(state, params=partitioning.gathered(
          state["params"], shardings["params"])), batch, key)
    finally:
      _SPLIT_PARAMS.pop()

  return jax.jit(step,
                 in_shardings=(shardings,
                               partitioning.batch_sharding(
                                   mesh, recipe.batch_axis), None),
                 out_shardings=(shardings, None), donate_argnums=0)


FETCH_EVERY = 100  # steps whose metrics may wait on the devices at most

# Callables given (step, train_steps) at each step whose metrics the loop
# fetched (a log, an evaluation, a checkpoint; at least every FETCH_EVERY
# steps): the devices have finished the steps before it then, so the time
# between two calls is their time. `watching` adds one (the pipeline's
# time-left estimate).
_WATCHERS: list[Callable[[int, int], None]] = []


@contextlib.contextmanager
def watching(watcher: Callable[[int, int], None]) -> Iterator[None]:
  _WATCHERS.append(watcher)
  try:
    yield
  finally:
    _WATCHERS.remove(watcher)

PREFETCH = 2  # batches placed on the devices ahead of the step that takes them


class Prefetch:
  """The host batches of `batches`, each placed on the devices by `put`
  (`partitioning.put_batch`) in a background thread up to `depth` ahead of
  the train step: the host's batching and the transfer overlap the
  devices' work. An error of the batches is raised where the loop takes
  the next batch; `close` stops the thread."""

  def __init__(self, batches: Iterator[Any], put: Callable[[Any], Any],
               depth: int = PREFETCH):
    self._queue: queue.Queue = queue.Queue(maxsize=depth)
    self._stop = threading.Event()
    self._thread = threading.Thread(target=self._run, args=(batches, put),
                                    daemon=True, name="paraflax-prefetch")
    self._thread.start()

  def _offer(self, item: tuple[str, Any]) -> bool:
    while not self._stop.is_set():
      try:
        self._queue.put(item, timeout=0.1)
        return True
      except queue.Full:
        continue
    return False

  def _run(self, batches: Iterator[Any], put: Callable[[Any], Any]) -> None:
    try:
      for batch in batches:
        if not self._offer(("batch", put(batch))):
          return
      self._offer(("end", None))
    except BaseException as e:  # pylint: disable=broad-except
      self._offer(("error", e))

  def __iter__(self) -> Iterator[Any]:
    while True:
      kind, item = self._queue.get()
      if kind == "end":
        return
      if kind == "error":
        raise item
      yield item

  def close(self) -> None:
    self._stop.set()
    self._thread.join(timeout=60)


def train(recipe: Recipe, config: Any, workdir: str,
          on_eval: Callable[[int, dict[str, float]], None] | None = None,
          mesh: Mesh | None = None) -> State:
  """Runs (or resumes) training until `config.train_steps` updates, over
  `mesh` (default: the config's, `partitioning.config_mesh`). `config` is
  one `recipes.config_check.check` passed: its counts and intervals are
  trusted."""
  mesh = partitioning.config_mesh(config) if mesh is None else mesh
  init_key, train_key = jax.random.split(jax.random.key(config.seed))
  abstract, shardings = state_shardings(recipe, config, mesh)
  ckpt = checkpointing.Checkpoints(workdir, config.checkpoint.keep,
                                   recipe.select_metric)
  if ckpt.latest_step() is not None:
    state = ckpt.restore_latest(jax.tree.map(
        lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s),
        abstract, shardings))
    logging.info("resumed from step %d", int(state["step"]))
  else:
    state = jax.jit(recipe.init_state, out_shardings=shardings)(init_key)
  step = int(state["step"])
  step_fn = distributed.first_runs_together(
      jit_train_step(recipe, mesh, shardings), "train_step")
  primary = jax.process_index() == 0
  writer = metrics_lib.MetricsWriter(workdir, step, primary=primary)
  last, last_saved = config.train_steps, ckpt.latest_step()
  # In a log file (no terminal) the bar still shows, every 30 s.
  progress = tqdm.tqdm(total=last, initial=step, unit="step", dynamic_ncols=True,
                       mininterval=0.1 if sys.stderr.isatty() else 30,
                       disable=not primary)
  # The steps' metrics stay on the devices until a step that needs them
  # (a log, an evaluation, a checkpoint; at least every FETCH_EVERY
  # steps): the host never waits for a step it has no use for. Every
  # step's values are checked before anything is saved after it.
  pending = metrics_lib.Pending()

  def fetched() -> dict[str, float]:
    values = {}
    for at, values in pending.fetch():
      _check_finite(at, values, last_saved)
    if values:
      progress.set_postfix(loss=f"{values['loss']:.4f}", refresh=False)
    return values

  batches = Prefetch(
      recipe.batches(step),
      lambda b: partitioning.put_batch(b, mesh, recipe.batch_axis,
                                       local=recipe.local_batches))
  try:
    for batch in batches:
      if step >= last:
        break
      state, step_metrics = step_fn(state, batch,
                                    jax.random.fold_in(train_key, step))
      step += recipe.updates_per_call
      pending.add(step, step_metrics)
      progress.update(recipe.updates_per_call)
      log, evaluate, save = (_every(step, config.log_every, last),
                             _every(step, config.eval_every, last),
                             _every(step, config.checkpoint.every, last))
      if log or evaluate or save or len(pending) >= FETCH_EVERY:
        values = fetched()
        for watcher in _WATCHERS:
          watcher(step, last)
        if log:
          writer.write(step, values)
      if evaluate:
        evaluation = recipe.evaluate(state["params"])
        writer.write(step, evaluation)
        ckpt.save_if_best(step, state, evaluation)
        if on_eval:
          on_eval(step, evaluation)
      if save:
        ckpt.save(step, state)
        last_saved = step
  finally:
    batches.close()
    progress.close()
    writer.close()
    ckpt.close()
  return state
