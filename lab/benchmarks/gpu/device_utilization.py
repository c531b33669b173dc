r"""How busy the train loop keeps the device, and the beam search's speed.

The NMT train step of `configs/nmt.py:de` (or `--tiny`) on synthetic
batches of the config's shape, run by two loops for the same steps:
  sync      as the loop ran before: each step's batch placed in the step's
            thread and its metrics fetched to the host after the step (a
            host synchronisation per step)
  prefetch  as `training/loop.py` runs now: batches placed by the loop's
            `Prefetch` thread ahead of the step, metrics left on the device
            (`metrics.Pending`) and fetched every --log-every steps
each with steps/s, target tokens/s and, from a jax profile of --profile
steps of each (under OUT/profile_<loop>/, for TensorBoard or Perfetto),
the share of the wall time the device was busy (the summed device
compute of the trace, when the trace has it). Then the beam search's
sentences/s at beam 5 over random sources (`Translator.translate`, the
back-translation path), compile excluded.

Needs jax only (no TensorFlow, no data files: the subword models are
stand-ins of the config's sizes). Writes OUT/device_utilization.json, the
folder's summary, by children.write_result (the run's command, commit,
hardware with its GPUs, load and seconds); the profiles beside it are
jax's own:
  python lab/benchmarks/gpu/device_utilization.py OUT [--tiny] [--steps 200]
On a CPU (tests/test_gpu_device_utilization.py): --tiny --steps 6.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
sys.path.insert(0, _ROOT)
sys.path.insert(0, os.path.join(_ROOT, "lab", "benchmarks"))
import children  # pylint: disable=g-import-not-at-top,wrong-import-position


class _Pieces:
  """A stand-in subword model: only its size and decode are used."""

  def __init__(self, size: int):
    self.size = size

  def get_piece_size(self) -> int:
    return self.size

  def decode(self, ids) -> str:
    return " ".join(str(i) for i in ids)


def _config(tiny: bool):
  import importlib.util  # pylint: disable=g-import-not-at-top
  spec = importlib.util.spec_from_file_location(
      "nmt_config", os.path.join(_ROOT, "configs", "nmt.py"))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  config = module.get_config("de")
  if tiny:
    config.model.emb_dim = config.model.hidden = 24
    config.model.attention_dim = 24
    config.batch_size = 16
    config.data.max_len = 16
  return config


def _batches(config, vocab: int, seed: int = 0):
  """Host batches of the config's batch size and width, forever."""
  rng = np.random.default_rng(seed)
  rows, width = config.batch_size, config.data.max_len
  while True:
    lengths = rng.integers(width // 2, width + 1, rows)
    src = rng.integers(3, vocab, (rows, width)).astype(np.int32)
    tgt = rng.integers(3, vocab, (rows, width + 1)).astype(np.int32)
    mask = np.arange(width)[None] < lengths[:, None]
    yield {"src": np.where(mask, src, 0), "src_len": lengths.astype(np.int32),
           "tgt_in": np.where(mask, tgt[:, :-1], 0),
           "tgt_out": np.where(mask, tgt[:, 1:], 0),
           "tgt_len": lengths.astype(np.int32)}


def _device_busy_s(folder: str) -> float | None:
  """Summed duration of the device's ops in a jax profile trace (the
  Chrome trace that jax.profiler writes), or None without one."""
  events = children.trace_events(folder)
  if not events:
    return None
  devices = {e["pid"] for e in events if e.get("ph") == "M"
             and e.get("name") == "process_name"
             and any(k in str(e.get("args", {}).get("name", ""))
                     for k in ("/device:GPU", "/device:TPU"))}
  if not devices:
    return None
  busy = sum(e.get("dur", 0) for e in events
             if e.get("ph") == "X" and e.get("pid") in devices)
  return busy / 1e6


def _run_loop(kind: str, recipe, config, mesh, steps: int, log_every: int,
              profile: int, out: str) -> dict[str, Any]:
  import jax  # pylint: disable=g-import-not-at-top
  from paraflax.training import loop  # pylint: disable=g-import-not-at-top
  from paraflax.training import metrics  # pylint: disable=g-import-not-at-top
  from paraflax.training import partitioning  # pylint: disable=g-import-not-at-top
  _, shardings = loop.state_shardings(recipe, config, mesh)
  state = jax.jit(recipe.init_state, out_shardings=shardings)(
      jax.random.key(0))
  step_fn = loop.jit_train_step(recipe, mesh, shardings)
  key = jax.random.key(1)
  put = lambda b: partitioning.put_batch(b, mesh, recipe.batch_axis)  # pylint: disable=unnecessary-lambda-assignment
  vocab = recipe.model.tgt_vocab
  host = _batches(config, vocab)
  tokens = 0

  def run(n: int, first: int) -> float:
    nonlocal state, tokens
    start = time.perf_counter()
    if kind == "sync":
      for i in range(n):
        batch = next(host)
        tokens += int(batch["tgt_len"].sum())
        state, m = step_fn(state, put(batch), jax.random.fold_in(key, first + i))
        {k: float(v) for k, v in jax.device_get(m).items()}  # pylint: disable=expression-not-assigned
    else:
      pending = metrics.Pending()
      counted = []

      def placed(batch):
        counted.append(int(batch["tgt_len"].sum()))
        return put(batch)

      feed = loop.Prefetch(host, placed)
      try:
        for i, batch in zip(range(n), feed):
          state, m = step_fn(state, batch, jax.random.fold_in(key, first + i))
          pending.add(first + i, m)
          if (i + 1) % log_every == 0 or i + 1 == n:
            pending.fetch()
      finally:
        feed.close()
      tokens += sum(counted[:n])
    return time.perf_counter() - start

  run(2, 0)  # compiles
  tokens = 0
  seconds = run(steps, 2)
  row = {"steps": steps, "seconds": seconds, "steps_per_s": steps / seconds,
         "target_tokens_per_s": tokens / seconds}
  if profile:
    folder = os.path.join(out, f"profile_{kind}")
    with jax.profiler.trace(folder):
      wall = run(profile, 2 + steps)
    busy = _device_busy_s(folder)
    row.update(profile_steps=profile, profile_wall_s=wall,
               device_busy_s=busy,
               device_busy_share=None if busy is None else busy / wall)
  return row


def _beam(recipe, params, config, sentences: int, beam: int,
          batch_size: int) -> dict[str, Any]:
  rng = np.random.default_rng(2)
  vocab = recipe.model.src_vocab
  sources = [rng.integers(3, vocab, rng.integers(4, config.data.max_len))
             .astype(np.int32) for _ in range(sentences)]
  translator = recipe.translator
  list(translator.translate(params, sources[:batch_size], beam=beam,
                            batch_size=batch_size, stop="best_ended"))
  start = time.perf_counter()
  n = sum(1 for _ in translator.translate(params, sources, beam=beam,
                                          batch_size=batch_size,
                                          stop="best_ended"))
  seconds = time.perf_counter() - start
  return {"sentences": n, "beam": beam, "batch_size": batch_size,
          "seconds": seconds, "sentences_per_s": n / seconds}


def main(argv: list[str] | None = None) -> dict[str, Any]:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("out")
  parser.add_argument("--tiny", action="store_true",
                      help="a 24-unit model of width 16 (CPU checks)")
  parser.add_argument("--steps", type=int, default=200)
  parser.add_argument("--log-every", type=int, default=50)
  parser.add_argument("--profile", type=int, default=20,
                      help="steps traced by jax.profiler per loop (0: none)")
  parser.add_argument("--sentences", type=int, default=2048)
  parser.add_argument("--beam", type=int, default=5)
  parser.add_argument("--beam-batch", type=int, default=256)
  args = parser.parse_args(argv)
  import jax  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import nmt  # pylint: disable=g-import-not-at-top
  from paraflax.training import partitioning  # pylint: disable=g-import-not-at-top
  os.makedirs(args.out, exist_ok=True)
  config = _config(args.tiny)
  mesh = partitioning.config_mesh(config)
  vocab = config.vocab.size
  recipe = nmt.NMTRecipe(config, _Pieces(vocab), _Pieces(vocab), None, mesh)
  result = {**children.run_facts(__file__, argv),
            "device": str(jax.devices()[0].device_kind),
            "devices": mesh.size, "tiny": args.tiny,
            "batch_size": config.batch_size, "width": config.data.max_len,
            "loops": {}}
  for kind in ("sync", "prefetch"):
    result["loops"][kind] = _run_loop(kind, recipe, config, mesh, args.steps,
                                      args.log_every, args.profile, args.out)
    print(kind, json.dumps(result["loops"][kind]), flush=True)
  sync, pre = result["loops"]["sync"], result["loops"]["prefetch"]
  result["prefetch_over_sync"] = pre["steps_per_s"] / sync["steps_per_s"]
  params = jax.jit(recipe.init_state)(jax.random.key(0))["params"]
  result["beam_search"] = _beam(recipe, params, config, args.sentences,
                                args.beam, args.beam_batch)
  print("beam", json.dumps(result["beam_search"]), flush=True)
  children.write_result(os.path.join(args.out, "device_utilization.json"),
                        result)
  return result


if __name__ == "__main__":
  main()
