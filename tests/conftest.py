"""Every test sees 8 simulated CPU devices; TensorFlow stays quiet."""
import os
import pathlib
import subprocess
import sys

# Must happen before jax is imported anywhere in the test session.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=8")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import pytest  # noqa: E402  (after the environment is set)

# A GRAN small enough for CI, trained on real pairs (generaltest2022 cs-en,
# 1448 pairs of two human English references).
TINY = ("--config.data.task=paraphrase_en_generaltest2022_cs",
        "--config.model.word_dim=32", "--config.model.hidden=32",
        "--config.batch_size=50", "--config.megabatch=4",
        "--config.data.max_len=24", "--config.train_steps=48",
        "--config.log_every=4", "--config.eval_every=24",
        "--config.checkpoint.every=8", "--config.mesh.num_devices=1")


@pytest.fixture
def tiny_overrides():
  return list(TINY)


@pytest.fixture
def run_python():
  """Runs `code` in a fresh interpreter at the repository root (the modules
  a command imports are only visible there); returns its stdout."""
  def run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code],
                         cwd=pathlib.Path(__file__).resolve().parents[1],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout
  return run
