"""Where each side's NMT training step spends its time: ours (XLA:CPU)
and OpenNMT-py's (torch), the models and batches of nmt_vs_opennmt.py.

Each side trains from scratch on the same subwords; steps W+1..W+N of its
training loop (W = --warmup-steps, N = --steps) run under its own
profiler (jax's trace; torch.profiler in `onmt_profile_child.py`), and
the own time of every operation is summed by kind:
  products     matrix products (XLA:CPU's dot thunks and the library
               fusions that hold them; torch's mm, addmm, bmm, linear)
  elementwise  fused elementwise work and reductions (the GRU gates, the
               attention's softmax, the loss, the Adam update)
  loop         loop control: XLA's while and call thunks, torch's own
               recurrent kernels' bookkeeping
  copies       copies, transposes, slices, concatenations
  gathers      embedding lookups, gathers and scatters
  optimizer    torch's optimizer step around its elementwise operations
               (those count as elementwise, as our fused update does)
  other        the rest, and the loop's time outside any operation
per step and per 1,000 target tokens (the two sides' batches differ),
and, for ours, the step's matrix-product FLOPs (from its jaxpr,
`paraflax.aot.flops`) over the products' time. Profilers add
their own cost per operation, torch's the more: each side also reports
its step time, by the clock, over the second half of the steps before
its profile, and the shares, not the profiled step times, are what to
compare with nmt_vs_opennmt.py.

  ONMT_BIN=... python lab/benchmarks/nmt_step_profile.py \
      --workdir runs/nmt_de --onmt-bin $ONMT_BIN --encoder-hidden 128 \
      --cores 1 [--warmup-steps 20] [--steps 20] [--output FILE]
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import children  # lab/benchmarks/children.py, beside this script
import nmt_vs_opennmt as peer  # beside it too

KINDS = ("products", "elementwise", "loop", "copies", "gathers",
         "optimizer", "other")
# Operation names (XLA:CPU thunks; torch ops) -> kind; first match wins.
_OURS = ((r"^(dot|ynn_fusion|onednn|custom-call|.*matmul|.*gemm)", "products"),
         (r"^(while|call|conditional)", "loop"),
         (r"^(copy|transpose|slice|dynamic-slice|dynamic-update-slice|"
          r"concatenate|pad|reverse|bitcast)", "copies"),
         (r"^(gather|scatter|select-and-scatter|sort)", "gathers"),
         (r"^(fusion|wrapped_|loop_|input_|reduce|add|multiply|subtract|"
          r"divide|exponential|log|tanh|logistic|maximum|minimum|compare|"
          r"select|convert|broadcast|negate|rsqrt|sqrt|iota|power|and|or)",
          "elementwise"))
_TORCH = ((r"^aten::(mm|addmm|bmm|matmul|linear|baddbmm|addmv|mv)$",
           "products"),
          (r"^(Optimizer\.|aten::_foreach|.*[Aa]dam)", "optimizer"),
          (r"^aten::(_?gru|_?rnn|gru_cell|_thnn_fused_gru_cell)", "loop"),
          (r"^aten::(copy_|clone|contiguous|t$|transpose|permute|slice|"
           r"select$|narrow|cat|stack|split|chunk|unbind|view|reshape|"
           r"as_strided|expand|unsqueeze|squeeze|_unsafe_view|index_select"
           r"|pad|constant_pad_nd|flip)", "copies"),
          (r"^aten::(embedding|index|scatter|gather|masked_fill|"
           r"embedding_dense_backward|index_put|_index_put)", "gathers"),
          (r"^aten::", "elementwise"))


# An XLA:CPU thunk is named for its HLO instruction ("dot.31",
# "ynn_fusion.55", "wrapped_tanh").
_HLO = re.compile(r"^[a-z][\w-]*(\.\d+)?$")


def kind_of(name: str, rules) -> str:
  return next((kind for pattern, kind in rules if re.match(pattern, name)),
              "other")


def own_times(events: list[dict]) -> dict[str, float]:
  """Seconds of each event name not spent in an event nested in it, from
  the complete ("X") events of one thread."""
  out: dict[str, float] = collections.defaultdict(float)
  stack: list[list] = []  # [name, end, child time]
  for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
    while stack and e["ts"] >= stack[-1][1]:
      name, _, nested = stack.pop()
      out[name] -= nested
    if stack:
      stack[-1][2] += e["dur"]
    out[e["name"]] += e["dur"]
    stack.append([e["name"], e["ts"] + e["dur"], 0.0])
  for name, _, nested in stack:
    out[name] -= nested
  return {name: us / 1e6 for name, us in out.items()}


def xla_op_times(trace_dir: str) -> dict[str, float]:
  """Own seconds of each XLA:CPU thunk in jax's trace under `trace_dir`,
  summed over the client's threads."""
  events = children.trace_events(trace_dir)
  names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
           if e.get("ph") == "M" and e.get("name") == "thread_name"}
  by_thread = collections.defaultdict(list)
  for e in events:
    if e.get("ph") == "X" and names.get(
        (e["pid"], e.get("tid")), "").startswith("tf_XLA"):
      by_thread[(e["pid"], e["tid"])].append(e)
  out: dict[str, float] = collections.defaultdict(float)
  for thread in by_thread.values():
    for name, seconds in own_times(thread).items():
      if _HLO.match(name):  # not the executor's spans that wait for them
        out[name] += seconds
  return dict(out)


def by_kind(op_seconds: dict[str, float], rules, wall: float, steps: int
            ) -> dict[str, float]:
  """Milliseconds a step of each kind; the loop's time outside every
  operation goes to `other`."""
  out = dict.fromkeys(KINDS, 0.0)
  for name, seconds in op_seconds.items():
    out[kind_of(name, rules)] += seconds
  out["other"] += max(wall - sum(op_seconds.values()), 0.0)
  return {k: 1e3 * v / steps for k, v in out.items()}


def _shape(batch: dict) -> tuple:
  return tuple(sorted((k, v.shape) for k, v in batch.items()))


@dataclasses.dataclass
class Profile:
  """One side's profiled steps: each operation's own seconds, the steps'
  wall, count and target tokens, and a step's time before the profile."""
  op_seconds: dict[str, float]
  wall: float
  steps: int
  target_tokens: int
  unprofiled_step_s: float


def summary(profile: Profile, rules) -> dict:
  """Per kind: milliseconds a step, per 1,000 target tokens (the two sides'
  batches differ) and share of the profiled wall; the top operations."""
  kinds = by_kind(profile.op_seconds, rules, profile.wall, profile.steps)
  step_ms = 1e3 * profile.wall / profile.steps
  per_token = profile.steps * 1e3 / profile.target_tokens
  return {"steps": profile.steps, "step_ms": step_ms,
          "unprofiled_step_ms": 1e3 * profile.unprofiled_step_s,
          "target_tokens_per_step": profile.target_tokens / profile.steps,
          "kinds_ms": kinds,
          "kinds_ms_per_1k_target_tokens": {
              k: v * per_token for k, v in kinds.items()},
          "shares": {k: v / step_ms for k, v in kinds.items()},
          "top_ops_ms": dict(sorted(
              ((n, 1e3 * s / profile.steps)
               for n, s in profile.op_seconds.items()),
              key=lambda kv: -kv[1])[:15])}


def _ours(args, config, recipe, stream) -> dict:
  import jax  # pylint: disable=import-outside-toplevel
  from paraflax.aot import flops  # pylint: disable=import-outside-toplevel
  total = args.warmup_steps + args.steps
  init, key = jax.jit(recipe.init_state), jax.random.key(config.seed)
  state = init(key)
  train_step = jax.jit(recipe.train_step, donate_argnums=0)
  # Every width compiles, and its products' FLOPs are counted, before the
  # loop.
  ahead, widths, product_flops, tokens = dataclasses.replace(stream), {}, 0, 0
  for i in range(total):
    batch = ahead.get(i)
    shape = _shape(batch)
    if shape not in widths:
      jax.block_until_ready(train_step(init(key), batch, None))
      widths[shape] = flops.matmul_flops(recipe.train_step, state, batch,
                                         None)[0]
    if i >= args.warmup_steps:
      product_flops += widths[shape]
      tokens += int(batch["tgt_len"].sum())
  half = args.warmup_steps // 2
  for i in range(total):
    if i == half:
      jax.block_until_ready(state)
      unprofiled = time.perf_counter()
    if i == args.warmup_steps:
      jax.block_until_ready(state)
      unprofiled = (time.perf_counter() - unprofiled) / (i - half)
      trace = tempfile.mkdtemp(prefix="nmt_step_profile_")
      # Python's tracer off: on one core it would take the core the
      # step runs on.
      options = jax.profiler.ProfileOptions()
      options.python_tracer_level = 0
      jax.profiler.start_trace(trace, profiler_options=options)
      start = time.perf_counter()
    state, metrics = train_step(state, stream.get(i), None)
  jax.block_until_ready(metrics)
  wall = time.perf_counter() - start
  jax.profiler.stop_trace()
  found = summary(Profile(xla_op_times(trace), wall, args.steps, tokens,
                          unprofiled), _OURS)
  products_s = found["kinds_ms"]["products"] * args.steps / 1e3
  return {**found, "product_gflops_per_step": product_flops / args.steps / 1e9,
          "product_gflop_per_s": product_flops / 1e9 / products_s}


def _opennmt(args, config, tmp: str, translator) -> dict:
  total = args.warmup_steps + args.steps
  src_sp, tgt_sp = translator.src_sp, translator.tgt_sp
  cfg = peer.onmt_config(tmp, config, max(src_sp.get_piece_size(),
                                          tgt_sp.get_piece_size()), total + 1)
  vocabularies = peer.onmt_vocabularies(args.onmt_bin, tmp, cfg, src_sp,
                                        tgt_sp, args.onmt_vocab)
  child = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "onmt_profile_child.py")
  proc = subprocess.run(
      [f"{args.onmt_bin}/python", child, "--wait", str(args.warmup_steps),
       "--steps", str(args.steps), "--", "-config", cfg],
      stdout=subprocess.PIPE, text=True, check=False)
  lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
  if proc.returncode or not lines:
    sys.exit(f"the OpenNMT-py profile failed (exit {proc.returncode}); "
             "its stderr is above")
  found = json.loads(lines[-1])
  ops = {n: o["self_s"] for n, o in found["ops"].items()
         if not n.startswith("ProfilerStep")}
  return {**summary(Profile(ops, found["wall_s"], found["steps"],
                            found["target_tokens"],
                            found["unprofiled_step_s"]), _TORCH),
          "torch_threads": found["threads"], "vocabulary": vocabularies}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--workdir", required=True,
                      help="an NMT workdir: its config and subwords")
  parser.add_argument("--onmt-bin", required=True,
                      help="bin/ of a venv with OpenNMT-py 3.0.4")
  parser.add_argument("--encoder-hidden", type=int,
                      help="as nmt_vs_opennmt.py's: 128 trains OpenNMT-py's "
                      "brnn's model")
  parser.add_argument("--cores", type=int, default=1,
                      help="both sides on the first N cores, N threads each")
  parser.add_argument("--onmt-vocab", choices=peer.VOCABULARIES,
                      default="all", help="as nmt_vs_opennmt.py's")
  parser.add_argument("--warmup-steps", type=int, default=20)
  parser.add_argument("--steps", type=int, default=20)
  parser.add_argument("--output",
                      default="lab/results/nmt_step_profile.json")
  args = parser.parse_args()
  from paraflax.recipes import nmt  # pylint: disable=import-outside-toplevel
  peer.pin_cores(args.cores)  # before jax starts
  facts = children.run_facts(__file__, None)
  config, translator, _, _, data, stream = peer.training_inputs(
      args.workdir, args.encoder_hidden)
  src_sp, tgt_sp = translator.src_sp, translator.tgt_sp
  recipe = nmt.NMTRecipe(config, src_sp, tgt_sp, stream, mesh=translator.mesh)
  ours = _ours(args, config, recipe, stream)
  print("ours", json.dumps(ours), flush=True)
  with tempfile.TemporaryDirectory(prefix="nmt_step_profile_") as tmp:
    peer.write_lines(f"{tmp}/train.src",
                     (peer.as_pieces(src_sp, s) for s in data.src))
    peer.write_lines(f"{tmp}/train.tgt",
                     (peer.as_pieces(tgt_sp, t) for t in data.tgt))
    theirs = _opennmt(args, config, tmp, translator)
  print("opennmt", json.dumps(theirs), flush=True)
  children.write_result(args.output, {
      **facts, "benchmark": "nmt_step_profile", "cores": args.cores,
      "vocabulary": {"src": src_sp.get_piece_size(),
                     "tgt": tgt_sp.get_piece_size()},
      "warmup_steps": args.warmup_steps, "kinds": list(KINDS),
      "ours": ours, "opennmt": theirs,
      "kinds_ratio_ours_over_opennmt": {
          k: ours["kinds_ms_per_1k_target_tokens"][k]
          / theirs["kinds_ms_per_1k_target_tokens"][k]
          for k in KINDS if theirs["kinds_ms_per_1k_target_tokens"][k]}},
      peers=peer.onmt_versions(args.onmt_bin))


if __name__ == "__main__":
  main()
