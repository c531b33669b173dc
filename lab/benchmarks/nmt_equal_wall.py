"""BLEU after the same wall time as OpenNMT-py 3.0.4, both trained from
scratch at the same time on the same subwords, each on its own core.

  python lab/benchmarks/nmt_equal_wall.py --workdir runs/nmt_feed \
      --onmt-bin /path/to/onmt-venv/bin [--minutes 20] [--every 50] \
      [--cores 0 1] [--output lab/results/nmt_equal_wall.json]

The workdir gives the sentencepiece models (both sides cut the same pieces;
OpenNMT-py reads them as text, as in `nmt_vs_opennmt.py`, whose settings it
trains with: same sizes, batch, optimizer, label smoothing, seed). Our side
is `paraflax train --config configs/nmt.py:de` as a user runs it, in a fresh
workdir holding copies of those models, with in-training evaluation off
(OpenNMT-py validates never, either) and a checkpoint every `--every` steps
on both sides.

The two trainings start together, ours under `taskset -c CORE0` with one
XLA thread, OpenNMT-py under `taskset -c CORE1` with one torch thread, so
that whatever else loads the machine loads both. Each process's clock
starts when it is launched: imports, data reading and our compiles count.
At `--minutes` both are killed; each side's newest whole checkpoint is its
model. Then each translates all of newstest2013 (`config.evals.dev_all`) at
beam 5 with its own tool, again side by side on the same cores: ours by
`paraflax eval --only dev_all` (the config's decode settings), OpenNMT-py by
`onmt_translate` (GNMT length penalty alpha 0.6, at most
`decode.max_output` subwords). Both are scored by sacrebleu (13a) against
the same references. The load average and each process's core and CPU
share are sampled every 30 s. children.write_result writes --output, with
the run's facts and OpenNMT-py's and torch's versions as the peer's.
"""
from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import children  # lab/benchmarks/, beside this script
import nmt_learning_vs_opennmt as learning
import nmt_vs_opennmt as peer

from paraflax import config as config_lib
from paraflax.data import bitext, sentencepiece_vocab
from paraflax.recipes import nmt
from paraflax.recipes import workdir as workdir_lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_FOREVER = 10**7  # train_steps: both run until killed
# One intra-op thread for XLA:CPU; taskset holds the rest on the core.
_ONE_XLA_THREAD = ("--xla_cpu_multi_thread_eigen=false "
                   "intra_op_parallelism_threads=1")


@dataclasses.dataclass
class Side:
  """One side's training process: its core, command, environment, log."""
  name: str
  core: int
  command: list[str]
  env: dict[str, str]
  log: str
  proc: subprocess.Popen | None = None
  started: float = 0.0

  def start(self) -> None:
    self.started = time.time()
    with open(self.log, "w", encoding="utf-8") as f:
      self.proc = subprocess.Popen(
          ["taskset", "-c", str(self.core), *self.command], env=self.env,
          stdout=f, stderr=subprocess.STDOUT, start_new_session=True)

  def kill(self) -> None:
    if self.proc.poll() is None:
      os.killpg(self.proc.pid, signal.SIGKILL)
    self.proc.wait()


def _env(extra: dict[str, str]) -> dict[str, str]:
  env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
             TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1",
             JAX_PLATFORMS="cpu", PYTHONPATH=ROOT,
             # OpenNMT-py 3.0.4 pickles argparse.Namespace (nmt_vs_opennmt).
             TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1")
  return {**env, **extra}


def _overrides(args) -> list[str]:
  return [f"--config.train_steps={_FOREVER}",
          f"--config.eval_every={_FOREVER}",
          f"--config.checkpoint.every={args.every}",
          f"--config.log_every={args.every}", "--config.mesh.num_devices=1"]


def _first_sentences(workdir: str, sentences: int) -> None:
  """Our side translates only the first `sentences` test lines (a short
  check of the script, not a result): the bleu evaluator's `sentences`."""
  saved = workdir_lib.read_config(workdir)
  with saved.unlocked():
    saved.evals.dev_all.sentences = sentences
  workdir_lib.save_config(workdir, saved)


def _sample(sides: list[Side], stop: threading.Event, every: float,
            samples: list[dict]) -> None:
  """The load average and, per side, its processor and CPU share (ps)."""
  while not stop.wait(every):
    row = {"t_s": round(time.time() - sides[0].started, 1),
           "load_average": os.getloadavg()}
    for side in sides:
      ps = subprocess.run(["ps", "-o", "psr=,pcpu=,nlwp=,rss=", "-p",
                           str(side.proc.pid)], capture_output=True,
                          text=True, check=False).stdout.split()
      if ps:
        row[side.name] = dict(zip(("core", "cpu_percent", "threads",
                                   "rss_kib"), map(float, ps)))
    samples.append(row)


def _top_threads(side: Side) -> str:
  """One `top -H` snapshot of a side's threads: how many use the CPU."""
  return subprocess.run(["top", "-b", "-H", "-n", "1", "-p",
                         str(side.proc.pid)], capture_output=True,
                        text=True, check=False).stdout


def _ours_checkpoint(workdir: str) -> tuple[int, float]:
  """The newest finished checkpoint (orbax renames it into place whole)
  and when it was written."""
  steps = [int(os.path.basename(p)) for p in
           glob.glob(os.path.join(workdir, "checkpoints", "*"))
           if os.path.basename(p).isdigit()]
  step = max(steps)
  return step, os.path.getmtime(os.path.join(workdir, "checkpoints",
                                             str(step)))


def _onmt_checkpoint(bin_dir: str, tmp: str) -> tuple[int, float]:
  """The newest checkpoint that loads (a kill may cut the last save)."""
  found = sorted((int(m.group(1)), p) for p in glob.glob(
      f"{tmp}/model_step_*.pt") if (m := re.search(r"_(\d+)\.pt$", p)))
  for step, path in reversed(found):
    code = f"import torch; torch.load({path!r}, weights_only=False)"
    if subprocess.run([f"{bin_dir}/python", "-c", code], check=False,
                      capture_output=True).returncode == 0:
      return step, os.path.getmtime(path)
  sys.exit(f"no OpenNMT-py checkpoint loads in {tmp}")


def _ours_tokens(config, data: bitext.EncodedBitext, steps: int) -> int:
  """Target tokens of our first `steps` batches (the stream is seeded)."""
  stream = bitext.BucketStream(data, config.batch_size, 1, config.seed,
                               sort_by=config.data.sort_by)
  return sum(int(stream.get(i)["tgt_len"].sum()) for i in range(steps))


def _onmt_tokens(log: str, steps: int) -> int:
  """Target tokens of OpenNMT-py's first `steps` steps, from its reports
  (the mean per batch of every `report_every` interval)."""
  text = open(log, encoding="utf-8").read()
  return round(sum(float(tgt) * peer.REPORT_EVERY
                   for step, tgt, _ in peer.ONMT_STEP.findall(text)
                   if int(step) <= steps))


def _train(sides: list[Side], minutes: float) -> tuple[list[dict], dict]:
  for side in sides:
    side.start()
  stop, samples = threading.Event(), []
  sampler = threading.Thread(target=_sample, args=(sides, stop, 30.0,
                                                   samples))
  sampler.start()
  time.sleep(min(300.0, minutes * 30))  # past our compiles
  top = {side.name: _top_threads(side) for side in sides}
  deadline = sides[0].started + minutes * 60
  while time.time() < deadline and all(s.proc.poll() is None for s in sides):
    time.sleep(1.0)
  for side in sides:
    side.kill()
  stop.set()
  sampler.join()
  for side in sides:
    if side.proc.returncode != -signal.SIGKILL:
      sys.exit(f"{side.name} ended early ({side.proc.returncode}); see "
               f"{side.log}")
  return samples, top


def _decode(args, config, inputs, tgt_sp, workdir: str, tmp: str,
            onmt_step: int, env: dict[str, str]) -> tuple[dict, dict]:
  """Both translate newstest2013 at the same time, each on its core."""
  start = time.time()
  with open(f"{tmp}/ours_eval.log", "w", encoding="utf-8") as log:
    ours = subprocess.Popen(
        ["taskset", "-c", str(args.cores[0]), sys.executable, "-m",
         "paraflax.cli", "eval", "--workdir", workdir, "--only", "dev_all"],
        env=env, stdout=log, stderr=subprocess.STDOUT)
    onmt_start = time.time()
    out = learning.translate(
        args.onmt_bin, tmp, inputs.all_src, onmt_step,
        config.evals.dev_all.beam, config, "all",
        ("taskset", "-c", str(args.cores[1])))
    onmt_s = time.time() - onmt_start
    if ours.wait():
      sys.exit(f"paraflax eval failed; see {tmp}/ours_eval.log")
  evals = os.path.join(workdir, "evals.json")  # written as ours ends
  found = json.load(open(evals, encoding="utf-8"))["dev_all"]
  onmt = learning.score(tgt_sp, out,
                        [t for _, t in inputs.test], config.decode.max_output)
  return ({**found, "decode_wall_s": os.path.getmtime(evals) - start},
          {**onmt, "decode_wall_s": onmt_s})


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--workdir", required=True,
                      help="an NMT workdir: its sentencepiece models")
  parser.add_argument("--onmt-bin", required=True,
                      help="bin/ of a venv with OpenNMT-py 3.0.4 and torch")
  parser.add_argument("--config", default=f"{ROOT}/configs/nmt.py:de")
  parser.add_argument("--minutes", type=float, default=20.0)
  parser.add_argument("--onmt-vocab", choices=peer.VOCABULARIES,
                      default="all", help="as nmt_vs_opennmt.py's")
  parser.add_argument("--every", type=int, default=50,
                      help="steps between checkpoints, both sides")
  parser.add_argument("--cores", type=int, nargs=2, default=[0, 1],
                      help="ours, OpenNMT-py's")
  parser.add_argument("--sentences", type=int, default=0,
                      help="translate only the first N test lines (a check "
                      "of the script; 0: all)")
  parser.add_argument("--keep", help="a new or empty folder to keep both "
                      "sides' files in (default: a temporary one, removed)")
  parser.add_argument("--output",
                      default="lab/results/nmt_equal_wall.json")
  args = parser.parse_args()
  # An earlier run's checkpoints there would start both sides part-trained.
  if args.keep and os.path.isdir(args.keep) and os.listdir(args.keep):
    parser.error(f"--keep {args.keep} holds an earlier run's files, which "
                 "both sides would resume from: name a new or empty folder")
  # One thread for every torch process of the run (run_logged's too).
  os.environ["OMP_NUM_THREADS"] = "1"
  facts = children.run_facts(__file__, None)
  overrides = _overrides(args)
  config = config_lib.load(args.config, overrides)
  translator, _, _ = nmt.load_translator(args.workdir)
  tmp = args.keep or tempfile.mkdtemp(prefix="nmt_equal_wall_")
  os.makedirs(tmp, exist_ok=True)
  ours_dir = os.path.join(tmp, "ours")
  os.makedirs(ours_dir, exist_ok=True)
  for name in (sentencepiece_vocab.SRC_MODEL, sentencepiece_vocab.TGT_MODEL):
    shutil.copy(os.path.join(args.workdir, name), ours_dir)
  if args.sentences:
    with config.unlocked():
      config.evals.dev_all.sentences = args.sentences
  inputs = learning.write_inputs(tmp, config, translator)
  cfg = peer.onmt_config(tmp, config, inputs.vocab, _FOREVER, args.every)
  vocabulary = peer.onmt_vocabularies(args.onmt_bin, tmp, cfg,
                                      translator.src_sp, translator.tgt_sp,
                                      args.onmt_vocab)
  sides = [
      Side("ours", args.cores[0],
           [sys.executable, "-m", "paraflax.cli", "train", "--config",
            args.config, "--workdir", ours_dir, *overrides],
           _env({"XLA_FLAGS": _ONE_XLA_THREAD}), f"{tmp}/ours_train.log"),
      Side("opennmt", args.cores[1],
           [f"{args.onmt_bin}/onmt_train", "-config", cfg],
           _env({}), f"{tmp}/train.log")]
  samples, top = _train(sides, args.minutes)
  reached = {}
  for side, (step, written) in zip(sides, (
      _ours_checkpoint(ours_dir), _onmt_checkpoint(args.onmt_bin, tmp))):
    reached[side.name] = {"steps": step,
                          "wall_to_checkpoint_s": written - side.started}
  reached["ours"]["target_tokens"] = _ours_tokens(
      config, inputs.data, reached["ours"]["steps"])
  reached["opennmt"]["target_tokens"] = _onmt_tokens(
      f"{tmp}/train.log", reached["opennmt"]["steps"])
  for row in reached.values():
    row["target_tokens_per_s"] = (row["target_tokens"]
                                  / row["wall_to_checkpoint_s"])
  print("trained", json.dumps(reached), flush=True)
  if args.sentences:
    _first_sentences(ours_dir, args.sentences)
  ours_bleu, onmt_bleu = _decode(args, config, inputs, translator.tgt_sp,
                                 ours_dir, tmp,
                                 reached["opennmt"]["steps"], sides[0].env)
  reached["ours"]["newstest2013"] = ours_bleu
  reached["opennmt"]["newstest2013"] = onmt_bleu
  onmt = peer.onmt_versions(args.onmt_bin)
  report = {
      "benchmark": "nmt_equal_wall", **facts, "minutes": args.minutes,
      "checkpoint_every": args.every, "cores": args.cores,
      "subwords_from": children.portable_path(args.workdir, "SUBWORDS_FROM"),
      "train_pairs": len(inputs.data), "test_sentences": len(inputs.test),
      "config": children.portable_path(args.config, "CONFIG"),
      "overrides": overrides, "decode": config.decode.to_dict(),
      "xla_flags": _ONE_XLA_THREAD, "torch_threads": onmt.pop("torch_threads"),
      "onmt_vocabulary": vocabulary,
      **reached, "bleu_ours_minus_opennmt": ours_bleu["bleu"]
      - onmt_bleu["bleu"], "samples": samples, "top_threads": top}
  children.write_result(args.output, report, peers=onmt)
  print(f"wrote {args.output}")
  if not args.keep:
    shutil.rmtree(tmp)


if __name__ == "__main__":
  main()
