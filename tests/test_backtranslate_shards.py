"""Back-translation in shards: over processes and devices, killed and
resumed per shard, and the readers of a sharded output.

The processes decode their shards alone (shard i in process i mod the
process count, each over its own 4 CPU devices); the records must be one
process's byte for byte.
"""
import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest

from paraflax import cli
from paraflax import errors
from paraflax.data import shards
from tests.conftest import ROOT
from tests.conftest import TINY_NMT
from tests.conftest import multi30k_val

PARAFLAX = pathlib.Path(sys.executable).parent / "paraflax"
_LIMIT_S = 300
_SHARDS, _ROWS = 3, 16


def _env(devices: int, **extra: str) -> dict[str, str]:
  env = {k: v for k, v in os.environ.items()
         if k not in ("XLA_FLAGS", "PARAFLAX_CRASH_AT") and
         not k.startswith("JAX_")}
  env.update(PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu",
             XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
             **extra)
  return env


@pytest.fixture(scope="module")
def nmt(tmp_path_factory) -> pathlib.Path:
  """A 2-step tiny NMT: its outputs need only be deterministic."""
  workdir = tmp_path_factory.mktemp("nmt") / "w"
  flags = [f for f in TINY_NMT if not f.startswith(
      ("--config.train_steps", "--config.eval_every",
       "--config.checkpoint.every", "--config.log_every",
       "--config.evals.dev.sentences"))]
  assert cli.main(["train", "--config", f"{ROOT}/configs/nmt.py:de",
                   "--workdir", str(workdir), *flags,
                   "--config.train_steps=2", "--config.eval_every=2",
                   "--config.checkpoint.every=2", "--config.log_every=2",
                   "--config.evals.dev.sentences=4"]) == 0
  return workdir


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> pathlib.Path:
  """3 input shards of 16 multi30k val pairs each."""
  folder = tmp_path_factory.mktemp("in")
  src, ref = multi30k_val(folder, _SHARDS * _ROWS)
  for path, lang in ((src, "de"), (ref, "en")):
    lines = path.read_text("utf-8").splitlines(keepends=True)
    for k in range(_SHARDS):
      (folder / f"part{k}.{lang}").write_text(
          "".join(lines[k * _ROWS:(k + 1) * _ROWS]), "utf-8")
  return folder


def _argv(nmt, inputs, output) -> list[str]:
  return [str(PARAFLAX), "backtranslate", "--workdir", str(nmt), "--output",
          str(output), "--src", str(inputs / "part*.de"), "--ref",
          str(inputs / "part*.en"), "--beam", "2", "--nbest", "2",
          "--batch-size", "8", "--stop", "k_finished"]


def _two_processes(argv: list[str], port: int, **env: str) -> list:
  """Runs `argv` as 2 processes of 4 devices; [(returncode, stderr)]."""
  cluster = ["--coordinator", f"127.0.0.1:{port}", "--num-processes", "2",
             "--heartbeat-timeout", "5"]
  running = [subprocess.Popen(argv + cluster + ["--process-id", str(i)],
                              env=_env(4, JAX_PROCESS_ID=str(i), **env),
                              stderr=subprocess.PIPE, text=True)
             for i in range(2)]
  out = []
  for process in running:
    _, err = process.communicate(timeout=_LIMIT_S)
    out.append((process.returncode, err))
  return out


def test_two_processes_write_the_shards_of_one_and_resume_each(
    nmt, inputs, tmp_path):
  one = tmp_path / "one" / "bt.jsonl"
  done = subprocess.run(_argv(nmt, inputs, one), env=_env(8),
                        capture_output=True, text=True, timeout=_LIMIT_S,
                        check=False)
  assert done.returncode == 0, done.stderr[-2000:]
  assert "8 device(s)" in done.stderr
  expected = shards.output_paths(str(one), _SHARDS)
  ids = [json.loads(l)["id"] for p in expected
         for l in pathlib.Path(p).read_text("utf-8").splitlines()]
  assert sorted(set(ids)) == list(range(_SHARDS * _ROWS))

  two = tmp_path / "two" / "bt.jsonl"
  argv = _argv(nmt, inputs, two)
  # Process 1 (shard 1) is killed after its first batch; process 0 stops
  # too (its peer's heartbeat ends), whatever it has written.
  (code0, err0), (code1, err1) = _two_processes(
      argv, 23471, PARAFLAX_CRASH_AT="backtranslate.batch:1@1")
  assert code1 == -signal.SIGKILL, err1[-2000:]
  assert code0 != 0, err0[-2000:]
  killed = shards.output_paths(str(two), _SHARDS)[1]
  assert len(pathlib.Path(killed).read_text().splitlines()) == 8 * 2
  for code, err in _two_processes(argv, 23472):
    assert code == 0, err[-2000:]
  for mine, want in zip(shards.output_paths(str(two), _SHARDS), expected):
    assert pathlib.Path(mine).read_bytes() == pathlib.Path(want).read_bytes()
  # Scoring reads the shards as one input: the bytes of the one file.
  joined = tmp_path / "joined.jsonl"
  joined.write_bytes(b"".join(pathlib.Path(p).read_bytes()
                              for p in expected))
  for source, out in ((str(two), "a.jsonl"), (str(tmp_path / "two"),
                                               "b.jsonl"),
                      (str(joined), "c.jsonl")):
    assert cli.main(["score-paraphrases", "--input", source, "--output",
                     str(tmp_path / out)]) == 0
  assert (tmp_path / "a.jsonl").read_bytes() == \
      (tmp_path / "b.jsonl").read_bytes() == (tmp_path / "c.jsonl").read_bytes()


def test_shard_names_and_what_readers_find(tmp_path):
  out = str(tmp_path / "bt.jsonl")
  paths = shards.output_paths(out, 3)
  assert [os.path.basename(p) for p in paths] == [
      "bt-00000-of-00003.jsonl", "bt-00001-of-00003.jsonl",
      "bt-00002-of-00003.jsonl"]
  assert shards.output_paths(out, 1) == [out]
  folder = str(tmp_path / "bt") + "/"
  assert os.path.basename(shards.output_paths(folder, 2)[1]) == \
      "part-00001-of-00002.jsonl"
  for p in reversed(paths):
    pathlib.Path(p).write_text('{"id": 0}\n')
  assert shards.resolve(out) == paths  # OUT.jsonl names its shards
  assert shards.resolve(str(tmp_path / "bt-*.jsonl")) == paths
  os.remove(paths[1])
  with pytest.raises(errors.DataError, match="shard.s. 1 of 3 are missing"):
    shards.resolve(out)
  pathlib.Path(paths[1]).write_text('{"id": 0}\n')
  pathlib.Path(shards.output_paths(out, 2)[0]).write_text('{"id": 0}\n')
  with pytest.raises(errors.DataError, match="more than one output"):
    shards.resolve(out)


def test_a_streamed_input_digest_is_that_of_the_whole_input():
  import hashlib  # pylint: disable=g-import-not-at-top
  from paraflax.decoding import backtranslation  # pylint: disable=g-import-not-at-top
  rows = [("Ein Hund \u00e4", "A dog"), ("x", "y \"q\""), ("z", "w")]
  for n in (0, 1, 3):
    want = hashlib.sha256(json.dumps([[r[0] for r in rows[:n]],
                                      [r[1] for r in rows[:n]]]).encode())
    assert backtranslation.input_digest(lambda n=n: rows[:n]) == \
        (want.hexdigest(), n)
