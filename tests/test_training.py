"""The train loop: sharding equivalence, resume after SIGKILL, NaN guard."""
import os
import pathlib
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import pytest

from paraflax import cli
from paraflax import config as config_lib
from paraflax import errors
from paraflax.data import pairs as pairs_lib
from paraflax.data import tasks
from paraflax.data import words
from paraflax.recipes import config_check
from paraflax.recipes import paraphrase
from paraflax.training import loop
from paraflax.training import partitioning

ROOT = pathlib.Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "paraflax.cli"]


def _recipe(overrides, shards):
  config = config_lib.load(str(ROOT / "configs" / "gran.py"), overrides)
  examples = tasks.examples(config.data.task, "train")[:400]
  pairs = [(e["sentence1"], e["sentence2"]) for e in examples]
  vocab = words.WordVocab.build(s for p in pairs for s in p)
  stream = pairs_lib.MegabatchStream(
      pairs_lib.encode_pairs(pairs, vocab, config.data.max_len),
      batch=config.batch_size, megabatch=config.megabatch, shards=shards,
      seed=config.seed)
  return config, paraphrase.ParaphraseRecipe(config, vocab, stream)


def _one_step(overrides, devices):
  config, recipe = _recipe(overrides, devices)
  mesh = partitioning.make_mesh(devices)
  _, shardings = loop.state_shardings(recipe, config, mesh)
  state = jax.jit(recipe.init_state, out_shardings=shardings)(
      jax.random.key(0))
  step = loop.jit_train_step(recipe, mesh, shardings)
  batch = partitioning.put_batch(next(recipe.batches(0)), mesh,
                                 recipe.batch_axis)
  state, metrics = step(state, batch, jax.random.key(1))
  return float(metrics["loss"]), jax.device_get(state["params"])


@pytest.mark.parametrize("extra", [[], ["--config.partitioning.rules="
                                        "(('.*', 'fsdp'),)"]])
def test_same_step_on_one_and_eight_devices(tiny_overrides, extra):
  assert jax.device_count() == 8
  # Batch 50 does not divide over 8 devices: padded to 56, padding masked.
  loss_1, params_1 = _one_step(tiny_overrides + extra, 1)
  loss_8, params_8 = _one_step(tiny_overrides + extra, 8)
  assert loss_8 == pytest.approx(loss_1, rel=1e-5)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=2e-5),
               params_1, params_8)


def test_length_groups_make_the_padded_step(tiny_overrides):
  # Real pairs, every sentence padded to 24 words, against sorted length
  # groups: the same negatives, loss and updates up to float rounding.
  loss_1, params_1 = _one_step(tiny_overrides + ["--config.length_groups=1"],
                               1)
  loss_g, params_g = _one_step(tiny_overrides + ["--config.length_groups=4"],
                               1)
  assert loss_g == pytest.approx(loss_1, rel=1e-5)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=2e-5),
               params_1, params_g)


def _run(args, **kwargs):
  env = dict(os.environ, XLA_FLAGS="", TF_CPP_MIN_LOG_LEVEL="2")
  return subprocess.Popen(CLI + args, cwd=ROOT, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          **kwargs)


def _finished_steps(workdir: pathlib.Path) -> list[int]:
  folder = workdir / "checkpoints"
  if not folder.is_dir():
    return []
  return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit())


def _final_params(workdir):
  import orbax.checkpoint as ocp  # pylint: disable=g-import-not-at-top
  step = max(_finished_steps(workdir))
  with ocp.CheckpointManager(workdir / "checkpoints") as manager:
    return step, manager.restore(step)["params"]


# Two Tasks sampled by rate (data.mixture, as configs/gran.py's default):
# where each member stands is summed again by the resumed run. The one-Task
# stream's resume is pinned by tests/test_kill_anywhere.py. A decaying rate
# after a warmup: the schedule's step count comes back with the checkpoint.
_MIXED = ["--config.data.task=",
          "--config.data.mixture=(('paraphrase_en_generaltest2022_cs', 3), "
          "('paraphrase_en_wikiauto', 1))",
          "--config.optimizer.schedule=cosine",
          "--config.optimizer.warmup_steps=16"]


_KILLED_STEPS = 48


def test_sigkill_and_restart_equals_uninterrupted(tmp_path, tiny_overrides):
  args = ["train", "--config", "configs/gran.py"] + tiny_overrides + _MIXED + [
      f"--config.train_steps={_KILLED_STEPS}",
      f"--config.eval_every={_KILLED_STEPS // 2}"]
  straight, killed = tmp_path / "straight", tmp_path / "killed"
  out, _ = _run(args + ["--workdir", str(straight)]).communicate(timeout=600)
  assert f"done: {_KILLED_STEPS} steps" in out, out

  proc = _run(args + ["--workdir", str(killed)])
  deadline = time.time() + 600
  while not any(8 <= s < _KILLED_STEPS for s in _finished_steps(killed)):
    assert proc.poll() is None and time.time() < deadline, "no checkpoint"
    time.sleep(0.02)
  proc.send_signal(signal.SIGKILL)
  proc.wait()
  assert proc.returncode == -signal.SIGKILL
  assert max(_finished_steps(killed)) < _KILLED_STEPS  # it really died mid-way
  out, _ = _run(args + ["--workdir", str(killed)]).communicate(timeout=600)
  assert f"done: {_KILLED_STEPS} steps" in out, out

  step_a, params_a = _final_params(straight)
  step_b, params_b = _final_params(killed)
  assert step_a == step_b == _KILLED_STEPS
  jax.tree.map(np.testing.assert_array_equal, params_a, params_b)

  text = tmp_path / "sentences.txt"
  text.write_text("A man is playing a guitar.\nThe cat sat on the mat.\n")
  embedded = []
  for workdir in (straight, killed):
    target = tmp_path / f"{workdir.name}.f32"
    # In this process: a fresh one per workdir would only add start-up.
    assert cli.main(["embed", "--workdir", str(workdir), "--input",
                     str(text), "--output", str(target)]) == 0
    embedded.append(np.fromfile(target, "<f4"))
  assert embedded[0].size == 2 * 32
  np.testing.assert_array_equal(embedded[0], embedded[1])
  steps = [int(l.split('"step": ')[1].split(",")[0])
           for l in (killed / "metrics.jsonl").read_text().splitlines()]
  assert steps == sorted(steps), "metrics rows repeated after resume"


def test_nan_loss_stops_with_a_message(tmp_path, tiny_overrides):
  config, recipe = _recipe(tiny_overrides + [
      "--config.train_steps=8", "--config.optimizer.learning_rate=nan"], 1)
  with pytest.raises(errors.TrainingDiverged, match="learning_rate"):
    loop.train(recipe, config, str(tmp_path))


def test_intervals_must_land_on_megabatches(tiny_overrides):
  config, recipe = _recipe(tiny_overrides + ["--config.train_steps=50"], 1)
  with pytest.raises(errors.ConfigError, match="train_steps"):
    config_check.check_intervals(config, recipe.updates_per_call)
