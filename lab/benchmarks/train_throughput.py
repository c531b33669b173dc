r"""Training throughput of the paraphrase train step (GRAN, LSTM-avg, Avg),
in pairs/s.

One train step call is one megabatch: `config.megabatch` (40) optimizer
updates of `config.batch_size` (100) pairs on the real English pairs
(`paraphrase_en_human`). pairs/s = batch_size * updates / second. Each
model runs once per `--length-groups` value (1: every sentence padded to
the megabatch's longest, the step before length groups), back to back.
Each times `--calls` calls after the compiling one, and more, cycling over
the same megabatches, until the timed calls add up to `--min-timed-s`: a
short step (Avg's) is then timed over enough calls that the few slowed by
other work on the host do not set the median.

Command (writes lab/results/train_throughput.json by children.write_result,
with the run's command, commit, hardware, load and seconds):
  .venv/bin/python lab/benchmarks/train_throughput.py --devices 1 8 --calls 1

The parent never imports jax: it runs this file once per device count in a
child whose XLA_FLAGS force that many host (CPU) devices, because the flag is
read once, when jax starts. Each child prints one JSON line on stdout.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import tempfile
import time
from typing import Any

import children  # lab/benchmarks/children.py, beside this script

_HERE = os.path.dirname(os.path.abspath(__file__))
_DEFAULT_OUTPUT = os.path.join(os.path.dirname(_HERE), "results", "train_throughput.json")
_CONFIGS = os.path.join(os.path.dirname(os.path.dirname(_HERE)), "configs")
_MODELS = ("gran", "lstmavg", "avg")


def _parse(argv: list[str] | None) -> argparse.Namespace:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--devices", type=int, nargs="+", default=[1, 8],
                      help="simulated CPU device counts, one child each")
  parser.add_argument("--models", nargs="+", choices=_MODELS,
                      default=["gran"], help="configs/paraphrase.py:<model> each")
  parser.add_argument("--length-groups", type=int, nargs="+", default=[1, 8],
                      help="config.length_groups values, one child each")
  parser.add_argument("--calls", type=int, default=1,
                      help="timed train step calls (megabatches) per count")
  parser.add_argument("--min-timed-s", type=float, default=10.0,
                      help="time more calls until the timed ones take this "
                      "long together")
  parser.add_argument("--output", default=_DEFAULT_OUTPUT)
  parser.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
  parser.add_argument("--model", default="gran", help=argparse.SUPPRESS)
  parser.add_argument("--groups", type=int, default=1, help=argparse.SUPPRESS)
  return parser.parse_args(argv)


# ---------------------------------------------------------------- child ----


def _measure(num_devices: int, calls: int, model: str, groups: int,
             min_timed_s: float) -> dict[str, Any]:
  """Builds the recipe, jits its step as `loop.train` does, times it."""
  from paraflax import host  # pylint: disable=g-import-not-at-top
  kept = host.keep_freed_memory()  # before jax starts, as `paraflax train`
  # Imported here so that only the child, with XLA_FLAGS set, starts jax.
  import jax  # pylint: disable=g-import-not-at-top
  import jaxlib  # pylint: disable=g-import-not-at-top
  from paraflax.data import batching  # pylint: disable=g-import-not-at-top
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import paraphrase  # pylint: disable=g-import-not-at-top
  from paraflax.training import loop  # pylint: disable=g-import-not-at-top
  from paraflax.training import partitioning  # pylint: disable=g-import-not-at-top

  load_before = os.getloadavg()
  # The family's file: the pairs' own vocabulary, as the recorded figures
  # (configs/gran.py adds PPDB's 88k words, a file of another stage).
  config = config_lib.load(os.path.join(_CONFIGS,
                                        f"paraphrase.py:{model}"))
  config.mesh.num_devices = num_devices
  config.length_groups = groups
  config.evals = {}  # nothing but the train step runs
  mesh = partitioning.config_mesh(config)
  with tempfile.TemporaryDirectory() as workdir:
    recipe = paraphrase.build(config, workdir, mesh)

  # The same keys, shardings and jitted step as `loop.train`.
  init_key, train_key = jax.random.split(jax.random.key(config.seed))
  _, shardings = loop.state_shardings(recipe, config, mesh)
  state = jax.jit(recipe.init_state, out_shardings=shardings)(init_key)
  step_fn = loop.jit_train_step(recipe, mesh, shardings)

  # Host batches are assembled before timing: the number is the device step
  # (placement included, as the loop places each batch); their cost is
  # reported apart as host_batch_s.
  stream = recipe.batches(0)
  host_times, megabatches = [], []
  for _ in range(1 + calls):
    start = time.perf_counter()
    megabatches.append(next(stream))
    host_times.append(time.perf_counter() - start)
  shapes = [{k: v.shape for k, v in mb.items()} for mb in megabatches]
  if any(s != shapes[0] for s in shapes):
    # A new sentence length bucket would recompile inside a timed call.
    raise RuntimeError(f"megabatch shapes differ: {shapes}")

  step, times, losses = 0, [], []
  for mb in itertools.chain(megabatches, itertools.cycle(megabatches[1:])):
    if len(times) > calls and sum(times[1:]) >= min_timed_s:
      break
    start = time.perf_counter()
    state, metrics = step_fn(
        state, partitioning.put_batch(mb, mesh, recipe.batch_axis),
        jax.random.fold_in(train_key, step))
    jax.block_until_ready((state, metrics))
    times.append(time.perf_counter() - start)
    losses.append(float(metrics["loss"]))
    step += recipe.updates_per_call

  timed = times[1:]
  median = statistics.median(timed)
  padded = batching.round_up(config.batch_size, mesh.size)
  return {
      "devices": mesh.size,
      "keep_freed_memory": kept,
      "backend": jax.default_backend(),
      "model": config.model.name,
      "length_groups": config.length_groups,
      "task": config.data.task,
      "batch_size": config.batch_size,
      "megabatch": recipe.updates_per_call,
      "padded_batch": padded,
      "padded_batch_per_device": padded // mesh.size,
      "max_len_timed": sorted({int(mb["a"].shape[2])
                               for mb in megabatches[1:]}),
      "calls_timed": len(timed),
      "min_timed_s": min_timed_s,
      "compile_and_first_call_s": times[0],
      "call_s": timed,
      "median_call_s": median,
      "min_call_s": min(timed),
      "pairs_per_s": config.batch_size * recipe.updates_per_call / median,
      "updates_per_s": recipe.updates_per_call / median,
      "host_batch_s": statistics.median(host_times),
      "loss_per_call": losses,
      "peak_rss_mib": children.peak_rss_mib(),
      # 1, 5, 15 min, at start and end: other jobs on the cores slow us.
      "loadavg_start": load_before,
      "loadavg_end": os.getloadavg(),
      "jax": jax.__version__,
      "jaxlib": jaxlib.__version__,
      "cpu_count": os.cpu_count(),
      "platform": platform.platform(),
  }


# --------------------------------------------------------------- parent ----


def _ratios(results: list[dict[str, Any]]) -> dict[str, float]:
  """pairs/s over the same model and groups at the first device count
  ("gran g8 devices 8/1": sharding cost, see README), and over the same
  model and devices at the first groups ("gran d1 groups 8/1": what length
  groups gain)."""
  first = results[0]
  ratios = {}
  for r in results:
    for axis, fixed in (("devices", "length_groups"),
                        ("length_groups", "devices")):
      base = next(b for b in results if b["model"] == r["model"]
                  and b[fixed] == r[fixed])
      if base is not r and base[axis] == first[axis]:
        tag = f"g{r[fixed]}" if fixed == "length_groups" else f"d{r[fixed]}"
        ratios[f"{r['model']} {tag} {axis} {r[axis]}/{base[axis]}"] = (
            r["pairs_per_s"] / base["pairs_per_s"])
  return ratios


def _table(results: list[dict[str, Any]], ratios: dict[str, float]) -> str:
  head = (f"{'model':>7} {'groups':>6} "
          f"{'devices':>7} {'compile+1st s':>13} {'median s/call':>13} "
          f"{'min s/call':>10} {'pairs/s':>8} {'updates/s':>9} "
          f"{'batch/dev':>9} {'max_len':>7} {'peak RSS MiB':>12} "
          f"{'load 1m':>7}")
  rows = [head]
  for r in results:
    rows.append(
        f"{r['model']:>7} {r['length_groups']:>6} "
        f"{r['devices']:>7} {r['compile_and_first_call_s']:>13.1f} "
        f"{r['median_call_s']:>13.2f} {r['min_call_s']:>10.2f} "
        f"{r['pairs_per_s']:>8.1f} {r['updates_per_s']:>9.2f} "
        f"{r['padded_batch_per_device']:>9} "
        f"{','.join(map(str, r['max_len_timed'])):>7} "
        f"{r['peak_rss_mib']:>12.0f} {r['loadavg_end'][0]:>7.2f}")
  rows += [f"pairs/s ratio {k}: {v:.2f}" for k, v in ratios.items()]
  return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
  args = _parse(argv)
  if args.calls < 1:
    raise SystemExit("--calls must be at least 1")
  if args.child:
    print(json.dumps(_measure(args.child, args.calls, args.model,
                              args.groups, args.min_timed_s)), flush=True)
    return
  results = [children.run_child(
      [os.path.abspath(__file__), "--child", str(n), "--calls",
       str(args.calls), "--min-timed-s", str(args.min_timed_s), "--model",
       model, "--groups", str(groups)], n)
      for model in args.models for n in args.devices
      for groups in args.length_groups]
  ratios = _ratios(results)
  report = {
      **children.run_facts(__file__, argv),
      "benchmark": "train_throughput",
      "results": results,
      "pairs_per_s_ratio": ratios,
  }
  children.write_result(args.output, report)
  print(_table(results, ratios))
  print(f"wrote {args.output}")


if __name__ == "__main__":
  main()
