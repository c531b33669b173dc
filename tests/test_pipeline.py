"""`paraflax pipeline`: end to end to the report on a test-sized tiny preset;
a rerun skips every stage; SIGKILLs inside stages, then the same command,
give the report of an uninterrupted run; bad input stops within seconds with
nothing written.

Runs are `paraflax` processes forked from the server of
tests/test_kill_anywhere.py (paraflax imported once, one compilation cache),
so the second pipeline costs its work, not its compilations.
"""
import json
import os
import pathlib
import shutil
import time

import pytest

from paraflax import choices
from paraflax import cli
from paraflax import config as config_lib
from paraflax.pipeline import plan as plan_lib
from paraflax.pipeline import planning
from paraflax.pipeline import stages
from paraflax.recipes import workdir as workdir_lib
from tests.conftest import ROOT
from tests.test_kill_anywhere import Runs

CONFIG = str(ROOT / "configs" / "pipeline.py")


def _set(stage: str, **values) -> list[str]:
  return [f"--config.{stage}.{k}={v}" for k, v in values.items()]


# The tiny preset cut to seconds of work a stage.
SMALL = [
    *_set("nmt.settings", train_steps=20, eval_every=20, log_every=10,
          **{"checkpoint.every": 10, "evals.dev.sentences": 8,
             "evals.dev.beam": 2, "vocab.size": 600, "model.emb_dim": 24,
             "model.hidden": 24, "model.attention_dim": 24,
             "data.max_len": 16, "decode.max_output": 24}),
    *_set("backtranslate", sentences=64, beam=2, nbest=2, batch_size=32),
    *_set("words.settings", train_steps=8, eval_every=8, log_every=4,
          batch_size=16, megabatch=4, **{"checkpoint.every": 4,
                                         "model.word_dim": 32}),
    *_set("gran.settings", train_steps=8, eval_every=8, log_every=2,
          batch_size=16, megabatch=2, **{"checkpoint.every": 4,
                                         "model.hidden": 32}),
    *_set("bilingual.settings", train_steps=12, eval_every=12, log_every=4,
          batch_size=16, **{"checkpoint.every": 6, "vocab.size": 600,
                            "model.word_dim": 24, "model.hidden": 24,
                            "data.max_len": 16, "eval.sentences": 16,
                            "evals.dev.sentences": 16}),
    *_set("mining", gold=50, distractors=100),
]


def _argv(workdir: pathlib.Path, *extra: str) -> list[str]:
  return ["pipeline", "--config", CONFIG + ":tiny", "--workdir",
          str(workdir), *SMALL, *extra]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Runs:
  return Runs(tmp_path_factory.mktemp("jit_cache"))


@pytest.fixture(scope="module")
def finished(runs, tmp_path_factory) -> tuple[pathlib.Path, str]:
  """An uninterrupted pipeline: its workdir and output."""
  workdir = tmp_path_factory.mktemp("pipe") / "w"
  return workdir, runs.finish(_argv(workdir))


def _numbers(workdir: pathlib.Path) -> dict:
  return json.loads((workdir / "report" / "report.json").read_text())


def test_runs_end_to_end_to_the_report(finished):
  workdir, output = finished
  for stage in stages.STAGES:
    assert (workdir / stage / plan_lib.DONE).is_file(), stage
    assert f"] {stage}: start (elapsed" in output
  assert "left)" in output
  report = (workdir / "report.md").read_text()
  for stage in ("nmt", "words", "gran", "bilingual"):
    assert f"(report/{stage}_curve.png)" in report
    assert (workdir / "report" / f"{stage}_curve.png").stat().st_size > 0
  assert "STS12-15 mean" in report and "## Mining" in report
  numbers = _numbers(workdir)
  mining = numbers["mining"]
  assert len(mining["sample"]) == 10
  assert len(mining["rows"]) == 12  # margins x retrievals
  # The scale of each benchmark, and every shown pair marked against gold.
  for split in ("dev", "test"):
    assert mining["benchmarks"][split]["gold"] == 50
    assert mining["benchmarks"][split]["distractors"] == [100, 100]
    assert f"**{split}**: 150 source and 150 English sentences, 50 gold " \
        "pairs among 100 distractors a side" in report
  right = sum(p["gold"] for p in mining["sample"])
  assert f"mined test pairs: {right} correct, {10 - right} wrong" in report
  assert report.count(" | correct |") == right
  assert report.count(" | wrong |") == 10 - right
  assert "test precision " in report and ", F1 " in report
  assert numbers["score"]["pairs"] > 0
  assert numbers["sts"]["semeval_2012_2015"]["n"] > 0
  # The GRAN started from the words stage's vectors, in their vocabulary.
  gran = workdir_lib.load_config(workdir / "gran", "paraphrase")
  vectors = workdir / "words" / stages.VECTORS
  assert gran.model.word_vectors == str(vectors)
  assert gran.model.word_dim == 32
  vocab = (workdir / "gran" / "vocab.txt").read_text().splitlines()
  assert len(vocab) > int(vectors.open().readline().split()[0])


def test_rerun_skips_every_stage(runs, finished):
  workdir, _ = finished
  before = {p: p.stat().st_mtime_ns for p in workdir.rglob("*")
            if p.is_file()}
  output = runs.finish(_argv(workdir))
  assert output.count("finished before") == len(stages.STAGES)
  assert ": start (" not in output
  assert {p: p.stat().st_mtime_ns for p in workdir.rglob("*")
          if p.is_file()} == before


def test_killed_stages_rerun_to_the_same_report(runs, finished, tmp_path):
  # A copy of the finished pipeline whose last stages are to run again:
  # killed inside the GRAN's training (its first checkpoint), then after
  # the STS table but before its DONE.json; each rerun resumes the last.
  workdir = tmp_path / "w"
  shutil.copytree(finished[0], workdir)
  for stage in ("gran", "sts", "bilingual", "mining", "report"):
    shutil.rmtree(workdir / stage)
  (workdir / "report.md").unlink()
  output = runs.kill_then_finish(_argv(workdir), ["checkpoint.saved:1",
                                                  "pipeline.stage_ran:2"])
  assert output.count("gran: start") == 2 and output.count("sts: start") == 2
  assert output.count("nmt: finished before") == 3
  assert _numbers(workdir) == _numbers(finished[0])


def test_existing_nmt_workdir_until_and_only(runs, finished, tmp_path):
  workdir, nmt = tmp_path / "w", finished[0] / "nmt"
  argv = _argv(workdir, f"--config.nmt.workdir={nmt}")
  output = runs.finish([*argv, "--until", "backtranslate"])
  assert "[2/2] backtranslate: done" in output
  assert json.loads((workdir / "nmt" / plan_lib.DONE).read_text())[
      "workdir"] == str(nmt)
  assert not (workdir / "nmt" / "checkpoints").exists()  # trained nothing
  assert (workdir / "backtranslate" / "bt.jsonl").read_bytes() == (
      finished[0] / "backtranslate" / "bt.jsonl").read_bytes()
  output = runs.finish([*argv, "--only", "score"])
  assert "[1/1] score: done" in output
  assert sorted(p.name for p in workdir.iterdir() if p.is_dir()) == [
      "backtranslate", "nmt", "score"]


def _fails(argv: list[str], capsys) -> str:
  start = time.monotonic()
  assert cli.main(argv) == cli.EXIT_BAD_INPUT
  assert time.monotonic() - start < 10
  return capsys.readouterr().err


def test_unknown_stage_is_refused_with_the_valid_ones(tmp_path, capsys):
  workdir = tmp_path / "w"
  err = _fails(_argv(workdir, "--config.stages=('nmt', 'bogus')"), capsys)
  assert "'bogus'" in err and ", ".join(stages.STAGES) in err
  err = _fails(_argv(workdir, "--config.stages=('bilingual', 'report', "
                          "'mining')"), capsys)
  assert "report needs mining before it" in err
  err = _fails(_argv(workdir, "--config.filter.score=bogus"), capsys)
  assert "filter / max_pairs" in err and "overlap_1" in err
  with pytest.raises(SystemExit):
    cli.main(_argv(workdir, "--until", "bogus"))
  assert "invalid choice: 'bogus'" in capsys.readouterr().err
  assert not workdir.exists()


def test_nmt_workdir_of_other_languages_is_refused(tmp_path, capsys):
  nmt = tmp_path / "nmt_fr"
  workdir_lib.save_config(nmt, config_lib.load_file(
      str(ROOT / "configs" / "nmt.py") + ":fr"))
  workdir = tmp_path / "w"
  err = _fails(_argv(workdir, f"--config.nmt.workdir={nmt}"), capsys)
  assert "fr-en" in err and "de-en" in err and str(nmt) in err
  assert not workdir.exists()


def test_only_with_unfinished_prerequisites_names_them(tmp_path, capsys):
  workdir = tmp_path / "w"
  err = _fails(_argv(workdir, "--only", "gran"), capsys)
  assert "--only gran needs score, words finished first" in err
  assert not workdir.exists()


def test_other_config_over_a_started_workdir_is_refused(finished, capsys):
  workdir, _ = finished
  err = _fails(_argv(workdir, "--config.mining.sample=5"), capsys)
  assert "mining" in err and "--overwrite" in err
  assert (workdir / "report.md").is_file()


@pytest.mark.parametrize("preset", ("tiny", "gpu", "pod"))
def test_every_preset_key_is_a_key_its_stage_uses(preset, tmp_path):
  config = config_lib.load_file(f"{CONFIG}:{preset}")
  plan = planning.plan(config, str(tmp_path / "w"))
  assert set(plan.configs) == set(planning.BASES)
  assert tuple(config.stages) == tuple(stages.STAGES) \
      == choices.PIPELINE_STAGES
  assert not os.listdir(tmp_path)


def test_without_the_words_stage_the_gran_starts_from_random_words(tmp_path):
  config = config_lib.load_file(f"{CONFIG}:tiny")
  config.stages = tuple(s for s in config.stages if s != "words")
  gran = planning.plan(config, str(tmp_path / "w")).configs["gran"]
  assert gran.model.word_vectors == ""
  assert not gran.data.vocab_from_vectors
  assert gran.model.word_dim == config.gran.settings.model.word_dim



def test_a_new_pair_names_its_data_once_for_every_stage(tmp_path, capsys):
  spec = {}
  for split in ("train", "dev", "mining_dev", "mining_test"):
    tsv = tmp_path / f"ru-en.{split}.tsv"
    tsv.write_text(f"Кошка спит ({split}).\tThe cat sleeps ({split}).\n",
                   encoding="utf-8")
    spec[split] = f"tsv:{tsv}"
  new_pair = ["--config.lang=ru", f"--config.data.train={spec['train']}",
              f"--config.data.dev={spec['dev']}"]
  config = config_lib.load(f"{CONFIG}:tiny", [
      *new_pair, f"--config.mining.dev={spec['mining_dev']}",
      f"--config.mining.test={spec['mining_test']}",
      "--config.mining.gold=1", "--config.mining.distractors=0"])
  plan = planning.plan(config, str(tmp_path / "w"))
  for stage in ("nmt", "bilingual"):
    assert plan.configs[stage].data.train == (spec["train"],)
    assert plan.configs[stage].data.dev == spec["dev"]
    assert plan.configs[stage].lang == "ru"
  workdir = tmp_path / "w"
  err = _fails(_argv(workdir, *new_pair), capsys)
  # The tiny preset mines de-en captions: another pair names its own.
  assert ("mining.dev: bitext_multi30k_de_en:validation is de-en bitext, "
          "but lang is ru") in err
  err = _fails(_argv(workdir, *new_pair, "--config.mining.dev=",
                     "--config.mining.test="), capsys)
  assert "mining.dev: no bundled news benchmark for ru-en" in err
  err = _fails(_argv(workdir, "--config.lang=ru"), capsys)
  assert "bitext_multi30k_de_en is de-en bitext, but lang is ru" in err
  assert not workdir.exists()


class _Clock:
  """A fake time.monotonic, moved by the test."""

  def __init__(self):
    self.t = 0.0

  def __call__(self) -> float:
    return self.t


def test_the_time_left_comes_from_the_rate_measured_after_warm_up(
    tmp_path, capsys):
  from paraflax.pipeline import progress as progress_lib  # pylint: disable=g-import-not-at-top
  from paraflax.training import loop  # pylint: disable=g-import-not-at-top
  config = config_lib.load_file(f"{CONFIG}:tiny")
  plan = planning.plan(config, str(tmp_path / "w"))
  now = _Clock()
  progress = progress_lib.Progress(plan, ["nmt", "words"], now=now)
  # Nothing measured: the preset's 2400 x 0.030 s + 800 x 0.028 s.
  progress.say(0, "nmt", "start")
  assert "about 0:01:34 left, by seconds_per_unit: nothing measured " \
      "yet" in capsys.readouterr().out
  with progress.running_stage(0, "nmt"):
    # The loop's reports: step 100 after 50 s of compilation (the warm-up,
    # left out), then 10 steps a second.
    for t, step in ((50, 100), (60, 200), (110, 700), (130, 900)):
      now.t = t
      for watcher in loop._WATCHERS:  # pylint: disable=protected-access
        watcher(step, 2400)
  assert not loop._WATCHERS  # pylint: disable=protected-access
  lines = capsys.readouterr().out.splitlines()
  # One line a minute; nmt's steps left at 10 a second, words' estimate
  # scaled by the same measured 3.33x of seconds_per_unit (a fixed guess
  # would say 0:01:07 at step 900).
  assert lines == [
      "== pipeline [1/2] nmt: step 200/2400, 10.00 steps/s measured after "
      "step 100 (elapsed 0:01:00, about 0:04:55 left)",
      "== pipeline [1/2] nmt: step 900/2400, 10.00 steps/s measured after "
      "step 100 (elapsed 0:02:10, about 0:03:45 left)"]
  progress.finished("nmt", 130.0)
  progress.say(0, "nmt", "done in 0:02:10")
  # The finished stage's 80 s for 800 steps after its warm-up, 3.33x the
  # preset's 24 s, scales words' 22.4 s.
  assert capsys.readouterr().out.strip().endswith(
      "nmt: done in 0:02:10 (elapsed 0:02:10, about 0:01:15 left)")
  # A stage without train steps counts its whole time: backtranslate's
  # 100 s for the preset's 3000 x 0.005 s = 15 s.
  progress = progress_lib.Progress(plan, ["backtranslate", "words"],
                                   now=now)
  with progress.running_stage(0, "backtranslate"):
    pass
  progress.finished("backtranslate", 100.0)
  progress.say(0, "backtranslate", "done in 0:01:40")
  assert capsys.readouterr().out.strip().endswith(
      "about 0:02:29 left)")  # 22.4 s x 100 / 15
  rate = progress_lib.Rate(now)
  rate.update(5)
  assert rate.per_second() is None  # the warm-up alone measures nothing


def _finished_stage(w: pathlib.Path, stage: str, best: float, select: str,
                    rows: list[dict]) -> None:
  """A finished train stage in W: its DONE.json and metrics.jsonl."""
  (w / stage).mkdir(parents=True)
  (w / stage / "metrics.jsonl").write_text(
      "".join(json.dumps(r) + "\n" for r in rows))
  (w / stage / plan_lib.DONE).write_text(json.dumps(
      {"stage": stage, "seconds": 1.0, "workdir": str(w / stage),
       "steps": 160, "select": select, "best": best}))


@pytest.mark.parametrize("gran, flagged", [(0.2795, True), (0.6671, False)])
def test_the_report_flags_a_stage_scored_below_its_start(gran, flagged,
                                                         tmp_path):
  from paraflax.pipeline import report  # pylint: disable=g-import-not-at-top
  select = "sts/STSb.dev-tuning/pearson"
  w = tmp_path / "w"
  _finished_stage(w, "words", 0.5612, select, [{"step": 800, select: 0.5612}])
  _finished_stage(w, "gran", gran, select, [{"step": 80, select: gran - .01},
                                            {"step": 160, select: gran}])
  # A stage whose metrics hold a step-0 evaluation is measured against it.
  _finished_stage(w, "bilingual", 0.31, "dev/accuracy",
                  [{"step": 0, "dev/accuracy": 0.42},
                   {"step": 600, "dev/accuracy": 0.31}])
  plan = plan_lib.Plan(config_lib.load_file(f"{CONFIG}:tiny"), str(w), {})
  found = report.numbers(plan, ["words", "gran", "bilingual"])
  text = report.markdown(found, [])
  assert found["gran"]["start"]["value"] == 0.5612
  line = ("- **gran scored 0.2795, below its start 0.5612** "
          "(sts/STSb.dev-tuning/pearson; its start: the words stage's "
          "vectors it started from, as an Avg encoder): its training "
          "lowered the score. Try more or cleaner pairs")
  assert (line in text) == flagged
  assert ("gran scored" in text) == flagged
  assert ("- **bilingual scored 0.3100, below its start 0.4200** "
          "(dev/accuracy; its start: its step-0 evaluation): its training "
          "lowered the score. Try fewer bilingual.settings.train_steps or "
          "a lower learning rate") in text
  assert "words scored" not in text
