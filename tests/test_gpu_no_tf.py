"""lab/benchmarks/gpu/no_tf.py, the runner of the lent GPU machine (jax, no
TensorFlow): it must feed a training what the seqio Tasks feed it, and
train with tensorflow, seqio and clu out of reach."""
from __future__ import annotations

import importlib.util
import json
import pathlib
import subprocess
import sys

import pytest

from paraflax import config as config_lib
from paraflax import errors
from paraflax.data import tasks
from tests.conftest import TINY_NMT

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUNNER = ROOT / "lab" / "benchmarks" / "gpu" / "no_tf.py"


def _runner():
  spec = importlib.util.spec_from_file_location("no_tf", RUNNER)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def _nmt_and_bilingual_reads() -> list[tuple[str, str]]:
  """(Task, split) of every text the de-en NMT and bilingual configs of
  lab/benchmarks/gpu/session.sh train and select on."""
  reads = set()
  for spec in ("nmt.py:de", "bilingual.py:de"):
    data = config_lib.load(str(ROOT / "configs" / spec)).data
    reads |= {(t, "train") for t in data.train}
    reads.add(tuple(data.dev.split(":")))
  return sorted(reads)


@pytest.mark.parametrize("task,split", _nmt_and_bilingual_reads())
def test_examples_are_the_tasks(task, split):
  assert _runner().examples(task, split) == tasks.examples(task, split)


@pytest.mark.parametrize("task", [
    {}, {"data_filter": {"score": "overlap_1", "lo": 0.2, "hi": 0.6},
         "max_pairs": 9, "seed": 3}])
def test_backtranslated_tasks_are_the_tasks(tmp_path, task):
  path = tmp_path / "bt.jsonl"
  path.write_text("".join(json.dumps(
      {"id": i, "reference": f"ref {i}", "translation": f"hyp {i % 7}",
       "rank": 0, "cost": 1.0, "scores": {"overlap_1": (i % 10) / 10}}) + "\n"
      for i in range(40)), encoding="utf-8")
  runner = _runner()
  name = runner.register_backtranslated(str(path), **task)
  assert name == tasks.register_backtranslated(str(path), **task)
  assert runner.examples(name, "train") == [
      e for part in tasks.iter_examples(name, "train") for e in part]
  assert runner.source_files(name) == tasks.source_files(name)


def test_data_specs_are_read_as_tasks_reads_them(tmp_path):
  tsv = tmp_path / "ru-en.tsv"
  tsv.write_text("один\tone\nдва\ttwo\n", encoding="utf-8")
  for name in (f"tsv:{tsv}", "bitext_newstest_dev_de_en:newstest2013"):
    assert _runner().examples(name, "train") == tasks.examples(name, "train")


def test_other_tasks_are_refused():
  runner = _runner()
  with pytest.raises(errors.ConfigError, match="catalogued"):
    runner.examples("no_such_task", "train")
  with pytest.raises(errors.ConfigError, match="with a cache"):
    runner.examples("bitext_multi30k_de_en", "train", cache_dir="/tmp")


# None in sys.modules: `import` fails and find_spec answers None, as for a
# package that is not installed.
_BLOCKED = """
import runpy, sys
for name in ("tensorflow", "tensorflow_datasets", "seqio", "clu"):
  sys.modules[name] = None
sys.argv = {argv!r}
runpy.run_path({runner!r}, run_name="__main__")
"""


def test_trains_without_tensorflow(tmp_path):
  workdir = tmp_path / "nmt"
  argv = [str(RUNNER), "train", "--config", str(ROOT / "configs" / "nmt.py")
          + ":de", "--workdir", str(workdir), *TINY_NMT,
          "--config.train_steps=2", "--config.eval_every=2",
          "--config.checkpoint.every=2", "--config.log_every=1",
          "--config.evals.dev.sentences=4"]
  out = subprocess.run(
      [sys.executable, "-c", _BLOCKED.format(argv=argv, runner=str(RUNNER))],
      cwd=ROOT, capture_output=True, text=True, timeout=600)
  assert out.returncode == 0, out.stderr[-3000:]
  rows = [json.loads(l) for l in
          (workdir / "metrics.jsonl").read_text().splitlines()]
  assert [r["step"] for r in rows if "loss" in r] == [1, 2]
  assert any("dev/bleu" in r for r in rows)
  assert not (workdir / "tensorboard").exists()
