"""Kill anywhere: `train` (Avg, GRAN, NMT, bilingual), `backtranslate` and
`mine`, SIGKILLed between two of their writes and rerun, end exactly as an
uninterrupted run, with no metrics row or record lost or repeated.

`PARAFLAX_CRASH_AT=<moment>:<n>` (paraflax.faults) picks the kill. Each
killed run resumes the previous one's leftovers, so one chain of runs tries
many moments, and moments come after resumed starts as well as fresh ones.
Runs are real `paraflax` processes forked from a server that has imported
paraflax once (multiprocessing's forkserver), so a run costs its work, not a
Python start-up.
"""
import json
import multiprocessing
import os
import pathlib
import signal
import sys
import tempfile

import jax
import numpy as np
import pytest

from paraflax import cli
from paraflax import faults
from paraflax.mining import embeddings_io
from tests.conftest import BILINGUAL_CONFIG
from tests.conftest import BILINGUAL_TINY
from tests.conftest import ROOT
from tests.conftest import TINY
from tests.conftest import TINY_NMT
from tests.conftest import multi30k_val

_SERVER = multiprocessing.get_context("forkserver")
_SERVER.set_forkserver_preload([
    "paraflax.cli", "paraflax.data.tasks", "paraflax.recipes.paraphrase",
    "paraflax.recipes.nmt", "paraflax.recipes.bilingual",
    "paraflax.training.loop", "paraflax.mining.pipeline",
    "paraflax.backtranslation", "tests.test_kill_anywhere"])
_LIMIT_S = 300

_STEPS = ("--config.train_steps=16", "--config.eval_every=8",
          "--config.checkpoint.every=8", "--config.log_every=4")
_SHORT = ("--config.train_steps=8", "--config.eval_every=4",
          "--config.checkpoint.every=4", "--config.log_every=2")
_AVG = tuple(a for a in TINY if "hidden" not in a)  # Avg has no LSTM
TRAIN = {
    "avg": ["--config", str(ROOT / "configs" / "avg.py"), *_AVG, *_STEPS],
    "gran": ["--config", str(ROOT / "configs" / "gran.py"), *TINY, *_STEPS],
    "nmt": ["--config", str(ROOT / "configs" / "nmt.py") + ":de", *TINY_NMT,
            *_SHORT, "--config.evals.dev.sentences=8",
            "--config.decode.max_output=24"],
    "bilingual": ["--config", BILINGUAL_CONFIG, *BILINGUAL_TINY, *_SHORT],
}
# A fresh Avg or GRAN run writes config.json, vocab.txt (atomically: a temp
# file, then a rename), then per step 4, 8, 12, 16 a log row, at 8 and 16 an
# eval row, the best state (if better) and the regular checkpoint (saved in
# the background); a resumed run first rewrites config.json and metrics.jsonl.
# Counts restart in every run.
KILLS = {
    "avg": ["atomic.renamed:1",  # config.json only
            "atomic.written:2",  # vocab.txt not yet renamed
            "metrics.written:3",  # step 8 eval row, no best yet
            "best.saved:1",  # best/8 without checkpoints/8
            "checkpoint.saved:1",  # checkpoints/8 in flight
            "metrics.written:2"],  # after a resumed start
    "gran": ["metrics.written:1", "best.saved:1", "checkpoint.saved:1"],
    # NMT and bilingual: subword models, config, then steps 2..8 as above.
    "nmt": ["atomic.renamed:2", "best.saved:1", "metrics.written:3",
            "checkpoint.saved:2"],
    "bilingual": ["atomic.written:1", "checkpoint.saved:1", "best.saved:1",
                  "metrics.written:4"],
}


def _main(argv: list[str], crash_at: str | None, log: str, jit_cache: str
          ) -> None:
  """A `paraflax` process (forked by the server), its output to `log`."""
  with open(log, "wb") as f:
    os.dup2(f.fileno(), 1)
    os.dup2(f.fileno(), 2)
  os.environ.pop(faults.ENV, None)
  if crash_at:
    os.environ[faults.ENV] = crash_at
  # Runs after the first load their programs instead of compiling them.
  jax.config.update("jax_compilation_cache_dir", jit_cache)
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
  jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
  sys.exit(cli.main(argv))


class Runs:
  """`paraflax` processes sharing one compilation cache."""

  def __init__(self, jit_cache: pathlib.Path):
    self.jit_cache = str(jit_cache)

  def run(self, argv: list[str], crash_at: str | None = None
          ) -> tuple[int, str]:
    """The exit code (-9: killed) and output of one run."""
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
      process = _SERVER.Process(target=_main, args=(argv, crash_at, log.name,
                                                    self.jit_cache))
      process.start()
      process.join(_LIMIT_S)
      if process.exitcode is None:
        process.kill()
        pytest.fail(f"{argv} still running after {_LIMIT_S} s")
      return process.exitcode, pathlib.Path(log.name).read_text(
          errors="replace")

  def finish(self, argv: list[str]) -> str:
    code, output = self.run(argv)
    assert code == 0, output
    return output

  def kill_then_finish(self, argv: list[str], moments: list[str],
                       after_kill=lambda: None) -> str:
    """Kills a run at each moment in turn, each resuming the last, then
    runs to the end; `after_kill` may damage what a kill left. The
    outputs."""
    outputs = []
    for moment in moments:
      code, output = self.run(argv, moment)
      assert code == -signal.SIGKILL, f"{moment} not reached:\n{output}"
      outputs.append(output)
      after_kill()
    return "".join(outputs) + self.finish(argv)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
  return Runs(tmp_path_factory.mktemp("jit_cache"))


# --- train --------------------------------------------------------------------


def _checkpoints(folder: pathlib.Path) -> dict[int, dict]:
  import orbax.checkpoint as ocp  # pylint: disable=g-import-not-at-top
  with ocp.CheckpointManager(folder) as manager:
    return {step: jax.device_get(manager.restore(step)["params"])
            for step in manager.all_steps()}


def _trained(workdir: pathlib.Path) -> dict:
  """What a train run leaves that matters: checkpoints, metrics, files (not
  the temp files of writes a kill cut short)."""
  files = sorted(p for p in workdir.iterdir()
                 if p.is_file() and not p.name.startswith(".tmp-"))
  return {"files": {p.name: p.read_bytes() for p in files},
          "checkpoints": _checkpoints(workdir / "checkpoints"),
          "best": _checkpoints(workdir / "best")}


def _assert_same(run: dict, expected: dict) -> None:
  for name, data in expected["files"].items():
    assert run["files"].get(name) == data, name
  assert run["files"].keys() == expected["files"].keys()
  for kind in ("checkpoints", "best"):
    assert run[kind].keys() == expected[kind].keys(), kind
    jax.tree.map(np.testing.assert_array_equal, run[kind], expected[kind])


@pytest.fixture(scope="module")
def trained(runs, tmp_path_factory):
  """Uninterrupted train runs, by model; `trained(model)` -> workdir."""
  done = {}

  def get(model: str) -> pathlib.Path:
    if model not in done:
      workdir = tmp_path_factory.mktemp(model) / "w"
      runs.finish(["train", "--workdir", str(workdir), *TRAIN[model]])
      done[model] = workdir
    return done[model]

  return get


@pytest.mark.parametrize("model", sorted(TRAIN))
def test_train_killed_anywhere_resumes_to_the_same_run(runs, trained,
                                                       tmp_path, model):
  workdir = tmp_path / "w"
  argv = ["train", "--workdir", str(workdir), *TRAIN[model]]
  runs.kill_then_finish(argv, KILLS[model])
  expected = _trained(trained(model))
  assert {"config.json", "metrics.jsonl"} <= set(expected["files"])
  _assert_same(_trained(workdir), expected)
  runs.finish(argv)  # finished: a rerun changes nothing
  _assert_same(_trained(workdir), expected)


# --- backtranslate ------------------------------------------------------------

_BT_LINES, _BT_BATCH = 40, 8  # 5 batches


@pytest.fixture(scope="module")
def bitext_files(tmp_path_factory):
  return multi30k_val(tmp_path_factory.mktemp("val"), _BT_LINES)


def _backtranslate(trained, bitext_files, output, *extra, beam: str = "2",
                   nbest: str = "2") -> list[str]:
  return ["backtranslate", "--workdir", str(trained("nmt")), "--output",
          str(output), "--src", str(bitext_files[0]), "--ref",
          str(bitext_files[1]), "--beam", beam, "--nbest", nbest,
          "--batch-size", str(_BT_BATCH), "--stop", "k_finished", *extra]


@pytest.fixture(scope="module")
def backtranslated(runs, trained, bitext_files, tmp_path_factory
                   ) -> pathlib.Path:
  output = tmp_path_factory.mktemp("bt") / "straight.jsonl"
  runs.finish(_backtranslate(trained, bitext_files, output))
  assert len(output.read_bytes().splitlines()) == _BT_LINES * 2
  return output


# (moments, whether each kill also leaves half a record, as a kill inside a
# write would). A fresh run writes OUT.meta.json (a temp file, a rename),
# then appends batch after batch; a resumed run starts at the first batch
# it lacks.
BT_KILLS = [
    (["atomic.written:1"], False), (["atomic.renamed:1"], False),
    (["backtranslate.batch:5"], False),  # every record, before the exit
    (["backtranslate.batch:2", "backtranslate.batch:1",
      "backtranslate.batch:1", "backtranslate.batch:1"], False),
    (["backtranslate.batch:1", "backtranslate.batch:2",
      "backtranslate.batch:1"], True),
]


@pytest.mark.parametrize("moments, torn", BT_KILLS,
                         ids=lambda v: "+".join(v) if isinstance(v, list)
                         else ("torn" if v else "whole"))
def test_backtranslate_killed_anywhere_resumes_to_the_same_records(
    runs, trained, bitext_files, backtranslated, tmp_path, moments, torn):
  expected = backtranslated.read_bytes()
  output = tmp_path / "killed.jsonl"
  argv = _backtranslate(trained, bitext_files, output)

  def half_a_record():
    if torn:
      with open(output, "ab") as f:
        f.write(expected.splitlines()[-1][:25])

  log = runs.kill_then_finish(argv, moments, after_kill=half_a_record)
  assert output.read_bytes() == expected
  assert log.count("the batch is redone") == (len(moments) if torn else 0)
  runs.finish(argv)  # finished: nothing appended
  assert output.read_bytes() == expected


def test_backtranslate_refuses_other_settings_and_keeps_the_records(
    runs, trained, bitext_files, backtranslated):
  output = backtranslated
  records = output.read_bytes()
  code, err = runs.run(_backtranslate(trained, bitext_files, output,
                                      beam="3", nbest="3"))
  assert code == cli.EXIT_BAD_INPUT
  assert (f"{output} holds the output of another run (differs in beam 2 -> "
          "3, nbest 2 -> 3)") in err
  assert "--overwrite" in err and "unfinished" not in err
  assert output.read_bytes() == records


# --- mine ---------------------------------------------------------------------

_N, _DIM, _BLOCK = 40, 8, 16


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
  folder = tmp_path_factory.mktemp("corpus")
  rng = np.random.default_rng(0)
  x = rng.normal(size=(_N, _DIM)).astype(np.float32)
  y = np.concatenate([x[:_N // 2] + 0.1 * rng.normal(size=(_N // 2, _DIM)),
                      rng.normal(size=(_N - _N // 2, _DIM))]).astype(
                          np.float32)
  for side, emb in (("x", x), ("y", y)):
    embeddings_io.write(str(folder / f"{side}.f32"), emb)
    (folder / f"{side}.txt").write_text(
        "".join(f"{side} sentence {i % 30}\n" for i in range(_N)), "utf-8")
  return folder


def _mine(corpus, output) -> list[str]:
  return ["mine", "--src-emb", str(corpus / "x.f32"), "--tgt-emb",
          str(corpus / "y.f32"), "--dim", str(_DIM), "--block", str(_BLOCK),
          "--src-text", str(corpus / "x.txt"), "--tgt-text",
          str(corpus / "y.txt"), "--output", str(output)]


@pytest.fixture(scope="module")
def mined(runs, corpus, tmp_path_factory) -> pathlib.Path:
  output = tmp_path_factory.mktemp("mined") / "straight.tsv"
  runs.finish(_mine(corpus, output))
  return output


# 30 distinct sentences a side, mined once each: 2 k-NN blocks, each both
# ways. A fresh run writes OUT.meta.json, blocks 0-1 and the TSV (each a temp
# file, then a rename: 4 renames), then removes the parts; a resumed run
# skips OUT.meta.json and the finished blocks.
MINE_KILLS = [
    ["atomic.written:1"], ["atomic.renamed:1"], ["atomic.written:2"],
    ["atomic.renamed:2"], ["atomic.renamed:3"], ["atomic.written:4"],
    ["atomic.renamed:4"],  # the TSV is there, the parts not yet removed
    ["atomic.renamed:2", "atomic.renamed:1", "atomic.written:1"],
]


@pytest.mark.parametrize("moments", MINE_KILLS, ids="+".join)
def test_mine_killed_anywhere_resumes_to_the_same_pairs(runs, corpus, mined,
                                                        tmp_path, moments):
  output = tmp_path / "killed.tsv"
  runs.kill_then_finish(_mine(corpus, output), moments)
  assert output.read_bytes() == mined.read_bytes()
  assert not pathlib.Path(f"{output}.parts").exists()
  assert json.loads(pathlib.Path(f"{output}.meta.json").read_text()) == \
      json.loads(pathlib.Path(f"{mined}.meta.json").read_text())
