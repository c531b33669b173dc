r"""What simulated CPU devices cost a bare product: one query block's
similarities against the whole corpus (and each row's maximum, so that
nothing large leaves the devices) on 1 device in corpus blocks, as the
search scans them, and on N devices with one corpus shard each; no top-k,
no kernel. The floor under `mining_throughput.py`'s "8 dev / 1 dev".

  python lab/benchmarks/mining_devices_product.py --devices 1 8 \
      --output lab/results/mining_devices_product.d256.amd-epyc-2core.json

Each device count runs in its own process (XLA_FLAGS before jax starts),
after `host.keep_freed_memory()`, as `paraflax mine`; the fastest of
--repeats calls after one untimed call. --output is written by
children.write_result, with the run's command, commit, hardware and load.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from paraflax import host

import children  # lab/benchmarks/children.py, beside this script


def measure(devices: int, rows: int, dim: int, query_block: int,
            corpus_block: int, repeats: int) -> float:
  """Milliseconds of one query block's products on `devices` devices."""
  import jax  # pylint: disable=g-import-not-at-top
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  from jax import lax  # pylint: disable=g-import-not-at-top
  from jax.sharding import NamedSharding, PartitionSpec as P  # pylint: disable=g-import-not-at-top

  mesh = jax.make_mesh((devices,), ("data",))
  rng = np.random.default_rng(0)
  q = jnp.asarray(rng.standard_normal((query_block, dim), dtype=np.float32))
  c = jax.device_put(rng.standard_normal((rows, dim), dtype=np.float32),
                     NamedSharding(mesh, P("data")))
  shard_rows = rows // devices
  blocks = max(1, shard_rows // corpus_block)

  def shard(q, c):
    def step(carry, block):
      s = jnp.einsum("qd,cd->qc", q, block, precision=lax.Precision.HIGHEST)
      return carry + s.max(axis=1), None
    init = lax.pcast(jnp.zeros(query_block), "data", to="varying")
    out, _ = lax.scan(step, init, c.reshape(blocks, -1, dim))
    return out[None]

  search = jax.jit(jax.shard_map(shard, mesh=mesh, in_specs=(P(), P("data")),
                                 out_specs=P("data")))
  jax.block_until_ready(search(q, c))
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(search(q, c))
    times.append(time.perf_counter() - start)
  return min(times) * 1e3


def main(argv: list[str] | None = None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--devices", type=int, nargs="+", default=[1, 8])
  # 50,176 = 7 corpus blocks of 7,168 (the search's tiles at 50k, block
  # 8192, 1 device) = 8 shards of 6,272 (its one tile per device at 8).
  parser.add_argument("--rows", type=int, default=50_176)
  parser.add_argument("--dim", type=int, default=256)
  parser.add_argument("--query-block", type=int, default=8192)
  parser.add_argument("--corpus-block", type=int, default=7168)
  parser.add_argument("--repeats", type=int, default=5)
  parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
  parser.add_argument("--output")
  args = parser.parse_args(argv)
  if args.child:
    host.keep_freed_memory()
    print(measure(args.child, args.rows, args.dim, args.query_block,
                  args.corpus_block, args.repeats))
    return
  runs = []  # [devices, ms] in the order run (a count may repeat)
  for devices in args.devices:
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=(
        f"--xla_force_host_platform_device_count={devices}"))
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(devices), *(argv or
                                                              sys.argv[1:])],
        env=env, capture_output=True, text=True, check=True)
    runs.append([devices, float(done.stdout.strip().splitlines()[-1])])
    print(f"{devices} device(s): {runs[-1][1]:.1f} ms per query block")
  first = runs[0][1]
  report = {**children.run_facts(__file__, argv), "rows": args.rows, "dim": args.dim,
            "query_block": args.query_block,
            "corpus_block": args.corpus_block, "runs_ms": runs,
            "over_first": [[d, t / first] for d, t in runs]}
  print(json.dumps(report["over_first"]))
  if args.output:
    children.write_result(args.output, report)


if __name__ == "__main__":
  main()
