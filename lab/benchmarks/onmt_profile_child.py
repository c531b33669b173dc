"""OpenNMT-py's `onmt_train` under torch's profiler, run by the peer's
python for nmt_step_profile.py: steps --wait+1 .. --wait+--steps are
profiled (CPU), and the own time and calls of each torch operation, the
profiled steps' wall and target tokens, and the unprofiled time a step of
the second half of the first --wait took are printed as one JSON line.
(FLOP counting, `with_flops`, would multiply the profiled time by five.)

  $ONMT_BIN/python lab/benchmarks/onmt_profile_child.py --wait 20 \
      --steps 20 -- -config onmt.yaml
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import torch
from torch import profiler


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--wait", type=int, required=True)
  parser.add_argument("--steps", type=int, required=True)
  parser.add_argument("onmt_args", nargs=argparse.REMAINDER)
  args = parser.parse_args()
  from onmt import trainer  # pylint: disable=import-outside-toplevel
  from onmt.bin import train  # pylint: disable=import-outside-toplevel

  prof = profiler.profile(
      activities=[profiler.ProfilerActivity.CPU],
      schedule=profiler.schedule(wait=args.wait, warmup=0,
                                 active=args.steps, repeat=1))
  accumulate = trainer.Trainer._gradient_accumulation  # pylint: disable=protected-access

  ends, tokens = [], []  # each step's end by the clock, its target tokens

  def step_then_mark(self, batches, normalization, total, report):
    before = total.n_words
    out = accumulate(self, batches, normalization, total, report)
    ends.append(time.perf_counter())
    tokens.append(total.n_words - before)
    prof.step()  # a step ends once its update is done, as ours
    return out

  trainer.Trainer._gradient_accumulation = step_then_mark  # pylint: disable=protected-access
  sys.argv = ["onmt_train", *[a for a in args.onmt_args if a != "--"]]
  prof.start()
  train.main()
  prof.stop()
  ops = {e.key: {"self_s": e.self_cpu_time_total / 1e6, "calls": e.count,
                 "flops": e.flops}
         for e in prof.key_averages()}
  # Each profiled step is a "ProfilerStep#N" event spanning it whole.
  steps = [e for e in prof.key_averages() if e.key.startswith("ProfilerStep")]
  half = args.wait // 2  # the second half of the steps before the profile
  print(json.dumps({"torch": torch.__version__,
                    "unprofiled_step_s": (ends[args.wait - 1] - ends[half - 1])
                                         / (args.wait - half),
                    "target_tokens": sum(
                        tokens[args.wait:args.wait + args.steps]),
                    "threads": torch.get_num_threads(),
                    "steps": sum(e.count for e in steps),
                    "wall_s": sum(e.cpu_time_total for e in steps) / 1e6,
                    "ops": ops}))


if __name__ == "__main__":
  main()
