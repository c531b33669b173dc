"""One run over several processes, on one machine.

`launch/local_processes.sh` starts 2 processes of 4 CPU devices each,
joined by jax.distributed over localhost (gloo collectives): the code path
of a multi-host launch. Each must train as 1 process of 8 devices does,
write one checkpoint with the other, stop when the other dies and resume.
"""
import gzip
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import jax
import numpy as np
import orbax.checkpoint as ocp
import pytest

from paraflax.data import paths
from tests.conftest import BILINGUAL_TINY
from tests.conftest import ROOT
from tests.conftest import TINY
from tests.conftest import TINY_NMT

LAUNCH = ROOT / "launch" / "local_processes.sh"
PARAFLAX = pathlib.Path(sys.executable).parent / "paraflax"
_LIMIT_S = 600


def _tiny(flags: tuple[str, ...], steps: int, every: int) -> list[str]:
  """The conftest's tiny run over every device, `steps` long, saving and
  evaluating every `every` steps."""
  replaced = ("--config.mesh.num_devices", "--config.train_steps",
              "--config.eval_every", "--config.checkpoint.every")
  kept = [f for f in flags if not f.startswith(replaced)]
  return kept + [f"--config.train_steps={steps}",
                 f"--config.eval_every={steps}",
                 f"--config.checkpoint.every={every}"]


RUNS = {  # model -> (config, flags)
    "gran": (f"{ROOT}/configs/gran.py", _tiny(TINY, 8, 4)),
    "nmt": (f"{ROOT}/configs/nmt.py:de", _tiny(TINY_NMT, 4, 2)),
    "bilingual": (f"{ROOT}/configs/bilingual.py:de",
                  _tiny(BILINGUAL_TINY, 4, 2)),
}


def _env(devices: int | None = None, **extra: str) -> dict[str, str]:
  env = {k: v for k, v in os.environ.items()
         if k not in ("XLA_FLAGS", "PARAFLAX_CRASH_AT")}
  env.update(PARAFLAX=str(PARAFLAX), PYTHONPATH=str(ROOT),
             JAX_PLATFORMS="cpu", **extra)
  if devices:
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
  return env


def _one_process(model: str, workdir: pathlib.Path) -> None:
  config, flags = RUNS[model]
  done = subprocess.run(
      [str(PARAFLAX), "train", "--config", config, "--workdir", str(workdir),
       *flags], env=_env(8), capture_output=True, text=True,
      timeout=_LIMIT_S, check=False)
  assert done.returncode == 0, done.stderr[-3000:]


def _two_processes(model: str, workdir: pathlib.Path, *extra: str,
                   **env: str) -> subprocess.Popen:
  config, flags = RUNS[model]
  return subprocess.Popen(
      ["bash", str(LAUNCH), "2", "4", config, str(workdir), *flags, *extra],
      env=_env(**env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
      text=True)


def _finish(process: subprocess.Popen, workdir: pathlib.Path) -> int:
  output, _ = process.communicate(timeout=_LIMIT_S)
  logs = "".join(p.read_text()[-2000:] for p in
                 sorted(pathlib.Path(f"{workdir}.logs").glob("*.log")))
  return process.returncode, output + logs


def _params(workdir: pathlib.Path) -> dict:
  """Every checkpoint's parameters, restored onto one device whatever the
  topology that wrote them."""
  device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
  with ocp.CheckpointManager(
      workdir / "checkpoints",
      item_handlers=ocp.StandardCheckpointHandler()) as manager:
    out = {}
    for step in manager.all_steps():
      target = jax.tree.map(
          lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=device),
          manager.item_metadata(step))
      out[step] = jax.device_get(manager.restore(
          step, args=ocp.args.StandardRestore(target))["params"])
    return out


def _metrics(workdir: pathlib.Path) -> list[dict]:
  return [json.loads(row) for row in
          (workdir / "metrics.jsonl").read_text().splitlines()]


def _assert_same_run(run: pathlib.Path, expected: pathlib.Path) -> None:
  """Equal up to the order of float sums (devices reduce in another order
  across processes)."""
  rows, want = _metrics(run), _metrics(expected)
  assert [sorted(r) for r in rows] == [sorted(r) for r in want]
  for row, wanted in zip(rows, want):
    # Dev scores (correlations, BLEU) amplify the parameters' rounding.
    np.testing.assert_allclose([row[k] for k in sorted(row)],
                               [wanted[k] for k in sorted(wanted)],
                               rtol=2e-4, atol=1e-6)
  params, want_params = _params(run), _params(expected)
  assert params.keys() == want_params.keys()
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4,
                                                       atol=1e-5),
               params, want_params)


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
  """1 process x 8 devices, by model: the reference runs."""
  done = {}

  def get(model: str) -> pathlib.Path:
    if model not in done:
      done[model] = tmp_path_factory.mktemp(f"one_{model}") / "w"
      _one_process(model, done[model])
    return done[model]

  return get


def _embed_like_one_process(workdir: pathlib.Path, one: pathlib.Path,
                            tmp_path: pathlib.Path) -> None:
  """A pod's checkpoint serves on one host, as the one process's does."""
  from paraflax import cli  # pylint: disable=g-import-not-at-top
  (tmp_path / "in.txt").write_text("a man rides a horse .\n")
  for run, out in ((workdir, "two.f32"), (one, "one.f32")):
    assert cli.main(["embed", "--workdir", str(run), "--input",
                     str(tmp_path / "in.txt"), "--output",
                     str(tmp_path / out)]) == 0
  np.testing.assert_allclose(
      np.fromfile(tmp_path / "two.f32", np.float32),
      np.fromfile(tmp_path / "one.f32", np.float32), rtol=1e-4, atol=1e-5)


# The bilingual recipe's streams are the NMT's (`bitext.BucketStream`, each
# process reading its rows): its run is left to --slow.
@pytest.mark.parametrize("model", [
    "gran", "nmt", pytest.param("bilingual", marks=pytest.mark.slow)])
def test_two_processes_train_as_one_process(model, one_process, tmp_path):
  code, output = _finish(_two_processes(model, tmp_path / "w"), tmp_path / "w")
  assert code == 0, output
  _assert_same_run(tmp_path / "w", one_process(model))


@pytest.mark.slow  # two 2-process runs and a one-process reference: ~5 min
def test_a_killed_process_stops_the_other_and_the_rerun_resumes(
    one_process, tmp_path):
  workdir = tmp_path / "w"
  code, output = _finish(_two_processes(
      "gran", workdir, PARAFLAX_CRASH_AT="checkpoint.saved:1@1"), workdir)
  assert code == 128 + signal.SIGKILL, output
  assert "process 1 exited with status 137" in output, output
  assert "stopping the others. Rerun the same command" in output
  code, output = _finish(_two_processes("gran", workdir), workdir)
  assert code == 0, output
  _assert_same_run(workdir, one_process("gran"))
  _embed_like_one_process(workdir, one_process("gran"), tmp_path)


def test_processes_with_different_configs_stop_before_any_write(tmp_path):
  config, flags = RUNS["gran"]
  workdir = tmp_path / "w"
  argv = [str(PARAFLAX), "train", "--config", config, "--workdir",
          str(workdir), "--coordinator", "127.0.0.1:23457",
          "--num-processes", "2", *flags]
  first = subprocess.Popen(argv + ["--process-id", "0"], env=_env(4),
                           stderr=subprocess.PIPE, text=True)
  second = subprocess.run(argv + ["--process-id", "1", "--config.seed=7"],
                          env=_env(4), capture_output=True, text=True,
                          timeout=120, check=False)
  _, first_err = first.communicate(timeout=120)
  for code, err in ((first.returncode, first_err),
                    (second.returncode, second.stderr)):
    assert code == 2, err
    assert "process 1 runs with config.seed = 7, process 0 with 0" in err
  assert not workdir.exists()


def test_an_unreachable_coordinator_is_named_within_seconds(tmp_path):
  config, flags = RUNS["gran"]
  started = time.monotonic()
  done = subprocess.run(
      [str(PARAFLAX), "train", "--config", config, "--workdir",
       str(tmp_path / "w"), "--coordinator", "127.0.0.1:9",
       "--num-processes", "2", "--process-id", "1", "--init-timeout", "2",
       *flags], env=_env(4), capture_output=True, text=True, timeout=120,
      check=False)
  assert done.returncode == 2, done.stderr
  assert ("process 1 cannot reach the coordinator 127.0.0.1:9 within 2 s"
          in done.stderr)
  assert time.monotonic() - started < 60
  assert not (tmp_path / "w").exists()


@pytest.mark.parametrize("flags, message", [
    (["--num-processes", "2"], "missing: --coordinator"),
    (["--coordinator", "h:1", "--num-processes", "2", "--process-id", "2"],
     "process id 2 is outside 0..1"),
    (["--coordinator", "nohost", "--num-processes", "2", "--process-id",
      "1"], "is not HOST:PORT"),
])
def test_incomplete_cluster_settings_are_named(flags, message, tmp_path,
                                               capsys):
  from paraflax import cli  # pylint: disable=g-import-not-at-top
  config, tiny = RUNS["gran"]
  code = cli.main(["train", "--config", config, "--workdir",
                   str(tmp_path / "w"), *tiny, *flags])
  assert code == 2
  assert message in capsys.readouterr().err
  assert not (tmp_path / "w").exists()


def test_the_tpu_launch_dry_run_prints_the_command_and_runs_nothing():
  done = subprocess.run(
      ["bash", str(ROOT / "launch" / "tpu_pod.sh"), "--dry-run", "my-tpu",
       "us-central2-b", "configs/gran.py", "gs://b/runs/g",
       "--config.seed=3"], env=_env(), capture_output=True, text=True,
      check=False)
  assert done.returncode == 0, done.stderr
  assert ("gcloud compute tpus tpu-vm ssh my-tpu --zone us-central2-b "
          "--worker=all --command cd ~/paraflax && .venv/bin/paraflax train "
          "--distributed --config configs/gran.py --workdir gs://b/runs/g "
          "--config.seed=3") in done.stderr


@pytest.mark.parametrize("script, args, message", [
    ("local.sh", ["configs/nope.py", "w"], "config file configs/nope.py"),
    ("local_processes.sh", ["2", "x", "configs/gran.py", "w"],
     "'x' is not a positive count"),
    ("local_processes.sh", ["2"], "usage:"),
    ("multi_gpu.sh", ["configs/gran.py", "w"],
     "JAX_COORDINATOR_ADDRESS is not set"),
    ("tpu_pod.sh", ["--dry-run", "t", "z", "configs/gran.py", "runs/g"],
     "is not a gs:// path"),
    ("tpu_pod.sh", ["--dry-run", "t", "z", "configs/gran.py", "gs://b/g",
                    "--seed=3"], "'--seed=3' is not a --config.key=value"),
])
def test_launch_scripts_check_arguments_before_starting(script, args,
                                                        message):
  env = {k: v for k, v in _env().items() if not k.startswith("JAX_")
         and k != "SLURM_JOB_ID"}
  env["JAX_PLATFORMS"] = "cpu"
  done = subprocess.run(["bash", str(ROOT / "launch" / script), *args],
                        env=env, capture_output=True, text=True, timeout=60,
                        check=False)
  assert done.returncode == 2, done.stderr
  assert message in done.stderr


def test_without_a_launcher_the_survivor_stops_within_the_heartbeat(
    tmp_path):
  """On real hosts nothing watches the processes: the survivor stops by
  itself, through its failed collective (our message) or jax.distributed's
  heartbeat (its message), never a hang."""
  config, flags = RUNS["gran"]
  workdir = tmp_path / "w"
  argv = [str(PARAFLAX), "train", "--config", config, "--workdir",
          str(workdir), "--coordinator", "127.0.0.1:23458",
          "--num-processes", "2", "--heartbeat-timeout=10", *flags]
  survivor = subprocess.Popen(argv + ["--process-id", "0"], env=_env(4),
                              stderr=subprocess.PIPE, text=True)
  lost = subprocess.run(
      argv + ["--process-id", "1"], capture_output=True, text=True,
      env=_env(4, JAX_PROCESS_ID="1",
               PARAFLAX_CRASH_AT="checkpoint.saved:1@1"),
      timeout=_LIMIT_S, check=False)
  assert lost.returncode == -signal.SIGKILL, lost.stderr[-2000:]
  killed = time.monotonic()
  _, err = survivor.communicate(timeout=_LIMIT_S)
  assert survivor.returncode != 0, err[-3000:]
  assert time.monotonic() - killed < 120
  assert ("another process of this run failed or was killed" in err
          or "another task died" in err), err[-3000:]


def _one_then_two_processes(command: str, flags: list[str], one: pathlib.Path,
                            two: pathlib.Path, port: int):
  """Runs `command` as one process of 8 devices into `one`, then as two
  processes of 4 into `two`; returns process 0's result."""
  alone = subprocess.run([str(PARAFLAX), command, *flags, "--output", str(one)],
                         env=_env(8), capture_output=True, text=True,
                         timeout=_LIMIT_S, check=False)
  assert alone.returncode == 0, alone.stderr[-2000:]
  argv = [str(PARAFLAX), command, *flags, "--output", str(two),
          "--coordinator", f"127.0.0.1:{port}", "--num-processes", "2"]
  second = subprocess.Popen(argv + ["--process-id", "1"], env=_env(4),
                            stderr=subprocess.PIPE, text=True)
  first = subprocess.run(argv + ["--process-id", "0"], env=_env(4),
                         capture_output=True, text=True, timeout=_LIMIT_S,
                         check=False)
  _, second_err = second.communicate(timeout=_LIMIT_S)
  assert first.returncode == 0, first.stderr[-2000:]
  assert second.returncode == 0, second_err[-2000:]
  return first


def test_mining_over_two_processes_writes_the_pairs_of_one(tmp_path):
  """Each process holds its devices' share of the target rows; the top-k
  merge is exact, so the TSV is byte for byte one process's."""
  rng = np.random.default_rng(0)
  x = rng.normal(size=(1500, 32)).astype(np.float32)
  y = np.concatenate([x[:700] + 0.3 * rng.normal(size=(700, 32)),
                      rng.normal(size=(900, 32))]).astype(np.float32)
  for name, emb in (("x.f32", x), ("y.f32", y)):
    emb.tofile(tmp_path / name)
  flags = ["--src-emb", str(tmp_path / "x.f32"), "--tgt-emb",
           str(tmp_path / "y.f32"), "--dim", "32", "--block", "256"]
  _one_then_two_processes("mine", flags, tmp_path / "one.tsv",
                          tmp_path / "two.tsv", 23459)
  assert (tmp_path / "two.tsv").read_bytes() == \
      (tmp_path / "one.tsv").read_bytes()
  assert len((tmp_path / "one.tsv").read_text().splitlines()) > 600
  assert not (tmp_path / "two.tsv.parts").exists()


def test_mining_processes_with_other_flags_stop_with_one_message(tmp_path):
  """A different --k in one process stops both at start, naming it: the
  k-NN's collectives (gloo) would abort the processes instead."""
  x = np.random.default_rng(0).normal(size=(64, 8)).astype(np.float32)
  x.tofile(tmp_path / "x.f32")
  argv = [str(PARAFLAX), "mine", "--src-emb", str(tmp_path / "x.f32"),
          "--tgt-emb", str(tmp_path / "x.f32"), "--dim", "8", "--output",
          str(tmp_path / "out.tsv"), "--coordinator", "127.0.0.1:23481",
          "--num-processes", "2"]
  first = subprocess.Popen(argv + ["--process-id", "0", "--k", "3"],
                           env=_env(2), stderr=subprocess.PIPE, text=True)
  second = subprocess.run(argv + ["--process-id", "1", "--k", "4"],
                          env=_env(2), capture_output=True, text=True,
                          timeout=120, check=False)
  _, first_err = first.communicate(timeout=120)
  for code, err in ((first.returncode, first_err),
                    (second.returncode, second.stderr)):
    assert code == 2, err
    assert err.strip().splitlines()[-1] == (
        "paraflax mine: error: process 1 runs with config.k = 4, process 0 "
        "with 3. Start every process of the run with the same flags and "
        "--config.* overrides."), err
  assert not (tmp_path / "out.tsv").exists()


def test_monods_over_two_processes_writes_the_table_of_one(tmp_path):
  """The signature bits are split over the devices of both processes; each
  streams the corpus, process 0 writes: byte for byte one process's."""
  (tmp_path / "table.txt").write_text(
      "cat ||| dog ||| 0.5\ncat ||| house ||| 0.3\ndog ||| man ||| 0.2\n"
      "house ||| home ||| 0.4\nman ||| woman ||| 0.5\n"
      "woman ||| girl ||| 0.3\n", "utf-8")
  with gzip.open(paths.data_path("multi30k_task1", "val.en.gz"), "rt",
                 encoding="utf-8") as f:
    (tmp_path / "corpus.txt").write_text(f.read(), "utf-8")
  flags = ["--corpus", str(tmp_path / "corpus.txt"), "--table",
           str(tmp_path / "table.txt"), "--bits", "64"]
  first = _one_then_two_processes("monods", flags, tmp_path / "one.txt",
                                  tmp_path / "two.txt", 23461)
  assert "on 8 device(s)" in first.stdout
  reranked = (tmp_path / "one.txt").read_text("utf-8")
  assert (tmp_path / "two.txt").read_text("utf-8") == reranked
  assert "monods=0.9" in reranked  # man / woman: similar contexts


def test_embedding_shards_over_two_processes_equals_one(one_process,
                                                        tmp_path):
  """`embed --distributed`: process p embeds shards p, p + 2, ... on its 4
  devices; the shards are those one process of 8 devices writes."""
  with gzip.open(paths.data_path("multi30k_task1", "val.en.gz"), "rt",
                 encoding="utf-8") as f:
    lines = f.read().splitlines()
  for i, (start, stop) in enumerate(((0, 50), (50, 110), (110, 180))):
    (tmp_path / f"t{i}.txt").write_text(
        "".join(l + "\n" for l in lines[start:stop]), "utf-8")
  flags = ["--workdir", str(one_process("bilingual")), "--lang", "en",
           "--input", str(tmp_path / "t*.txt")]
  first = _one_then_two_processes("embed", flags, tmp_path / "one",
                                  tmp_path / "two", 23463)
  assert "2 shard(s) embedded, 0 already there, of 2 for process 0 of 2" \
      in first.stderr
  names = sorted(p.name for p in (tmp_path / "one").glob("*.f16"))
  assert names == ["t0.txt.f16", "t1.txt.f16", "t2.txt.f16"]
  assert sorted(p.name for p in (tmp_path / "two").glob("*.f16")) == names
  for name in names:
    np.testing.assert_allclose(
        np.fromfile(tmp_path / "two" / name, np.float16).astype(np.float32),
        np.fromfile(tmp_path / "one" / name, np.float16).astype(np.float32),
        atol=2e-3)
