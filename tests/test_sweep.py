"""`paraflax sweep`: a tiny sweep of Avg points on real back-translation-
shaped pairs gives its table; the same sweep killed mid-way (SIGKILL) and
rerun gives the same table; workers split the points exactly; dry runs
train nothing; bad overrides and changed sweeps are refused.

The pairs: the first 300 of paraphrase_en_generaltest2022_cs (two human
references of one sentence) as reference / translation, with a made-up
cost, scored by `score-paraphrases`. Every point trains 8 steps."""
import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest

from paraflax import cli
from paraflax import config as config_lib
from paraflax import faults
from paraflax.inference import sweep as sweep_lib

ROOT = pathlib.Path(__file__).resolve().parents[1]
_PAIRS = 300
_SETTINGS = {
    "data": {"max_pairs": 100, "max_len": 24}, "model": {"word_dim": 32},
    "batch_size": 25, "megabatch": 2, "train_steps": 8, "log_every": 4,
    "eval_every": 4, "checkpoint": {"every": 4}, "mesh": {"num_devices": 1}}
# Selection on STSb dev as the configs do; one small test set.
_EVALS = ("evals={'sts': {'type': 'sts', 'sets': ('STSb.dev-tuning',)}, "
          "'test': {'type': 'sts', 'sets': ('STSb.test',), "
          "'in_training': False}}")
POINTS = ("data.filter={'score': 'length', 'lo': 0, 'hi': 30}",
          "data.filter={'score': 'overlap_1', 'lo': 0.5, 'hi': 1.0}",
          "data.filter={'score': 'random'}")


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> pathlib.Path:
  from paraflax.data import corpora  # pylint: disable=g-import-not-at-top
  from paraflax.filtering import score_paraphrases  # pylint: disable=g-import-not-at-top
  rows = corpora.read(corpora.get("paraphrase_en_generaltest2022_cs"),
                      "train")
  folder = tmp_path_factory.mktemp("bt")
  records = [{"id": i, "reference": a, "translation": b, "rank": 0,
              "cost": (i * 37 % 100) / 100, "source": f"s{i}"}
             for i, (a, b) in enumerate(zip(rows["sentence1"][:_PAIRS],
                                            rows["sentence2"][:_PAIRS]))]
  (folder / "bt.jsonl").write_text(
      "".join(json.dumps(r) + "\n" for r in records), "utf-8")
  score_paraphrases.score_file(str(folder / "bt.jsonl"),
                               str(folder / "scored.jsonl"))
  return folder / "scored.jsonl"


def _write_sweep(path: pathlib.Path, scored: pathlib.Path,
                 points=POINTS, settings=None) -> str:
  settings = {**_SETTINGS, **(settings or {})}
  settings["data"] = {**settings["data"], "task": f"backtranslated:{scored}"}
  path.write_text(
      "import ml_collections\n\n\ndef get_config():\n"
      "  return ml_collections.ConfigDict({\n"
      f"      'base': {str(ROOT / 'configs' / 'avg.py')!r},\n"
      f"      'settings': {settings!r},\n"
      f"      'overrides': ({_EVALS!r},),\n"
      f"      'points': {tuple(points)!r}, 'axes': (),\n"
      "      'columns': ('test/STSb.test/pearson',)})\n", "utf-8")
  return str(path)


def _argv(config: str, workdir: pathlib.Path, *extra: str) -> list[str]:
  return ["sweep", "--config", config, "--workdir", str(workdir), *extra]


@pytest.fixture(scope="module")
def config(scored) -> str:
  return _write_sweep(scored.parent / "sweep.py", scored)


@pytest.fixture(scope="module")
def straight(config, tmp_path_factory) -> pathlib.Path:
  """The sweep run by two workers, then its table assembled."""
  workdir = tmp_path_factory.mktemp("straight") / "w"
  for worker in ("0", "1"):
    assert cli.main(_argv(config, workdir, "--worker", worker,
                          "--workers", "2")) == 0
  assert not (workdir / "results.json").exists()  # workers write no table
  assert cli.main(_argv(config, workdir, "--report-only")) == 0
  return workdir


def _table(workdir: pathlib.Path) -> dict:
  return json.loads((workdir / "results.json").read_text())


def test_a_sweep_gives_one_row_per_point(straight):
  table = _table(straight)
  rows = table["points"]
  assert [r["name"] for r in rows] == [
      "filter-length-0-30", "filter-overlap_1-0.5-1.0", "filter-random"]
  for row, point in zip(rows, POINTS):
    assert row["status"] == "finished" and row["overrides"] == [point]
    assert row["select"] == "sts/STSb.dev-tuning/pearson"
    assert -1 <= row["selected"] <= 1 and row["checkpoint_step"] in (4, 8)
    assert -1 <= row["columns"]["test/STSb.test/pearson"] <= 1
    assert (straight / row["name"] / "best").is_dir()
    # The states for resuming go once the point is finished.
    assert not (straight / row["name"] / "checkpoints").exists()
  # Different data, different models.
  assert len({r["selected"] for r in rows}) == 3
  markdown = (straight / "results.md").read_text()
  assert markdown.count("\n| filter-") == 3 and "test/STSb.test" in markdown
  assert (straight / "results.png").read_bytes()[:4] == b"\x89PNG"


def _run(argv: list[str], crash_at: str) -> subprocess.CompletedProcess:
  """`paraflax` in its own process, killed at `crash_at`."""
  env = {**os.environ, "PYTHONPATH": str(ROOT), faults.ENV: crash_at}
  return subprocess.run([sys.executable, "-m", "paraflax.cli", *argv],
                        env=env, capture_output=True, text=True, timeout=300)


def test_a_killed_sweep_resumes_to_the_same_table(config, straight, tmp_path,
                                                  capsys):
  workdir = tmp_path / "w"
  # Point 0 saves checkpoints 4 and 8; the third save is point 1's first.
  killed = _run(_argv(config, workdir), "checkpoint.saved:3")
  assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
  assert (workdir / "filter-length-0-30" / sweep_lib.POINT_FILE).exists()
  assert not (workdir / "filter-overlap_1-0.5-1.0"
              / sweep_lib.POINT_FILE).exists()
  # As if a kill had come between the record and the removal of the
  # states for resuming: the rerun removes what is left.
  left = workdir / "filter-length-0-30" / "checkpoints" / "8"
  left.mkdir(parents=True)
  assert cli.main(_argv(config, workdir)) == 0
  assert "filter-length-0-30 finished before" in capsys.readouterr().out
  assert not left.parent.exists()
  assert _table(workdir) == _table(straight)


def test_workers_take_every_point_exactly_once(config):
  points = sweep_lib.points(config_lib.load(config))
  for workers in (1, 2, 3, 5):
    taken = [p.name for w in range(workers)
             for p in sweep_lib.mine(points, w, workers)]
    assert sorted(taken) == sorted(p.name for p in points)
  assert sweep_lib.mine(points, None, 1) == points
  with pytest.raises(Exception, match="0 <= worker < workers"):
    sweep_lib.mine(points, 2, 2)


def test_a_dry_run_trains_nothing(config, tmp_path, capsys):
  assert cli.main(_argv(config, tmp_path / "w", "--dry-run")) == 0
  out = capsys.readouterr().out
  assert all(str(tmp_path / "w" / n) in out for n in (
      "filter-length-0-30", "filter-overlap_1-0.5-1.0", "filter-random"))
  assert not (tmp_path / "w").exists()


def test_a_changed_sweep_is_refused(scored, straight, tmp_path, capsys):
  before = (straight / "results.json").read_bytes()
  changed = _write_sweep(tmp_path / "changed.py", scored,
                         settings={"train_steps": 12})
  assert cli.main(_argv(changed, straight)) == 2
  err = capsys.readouterr().err
  assert "holds the output of another run" in err and "--overwrite" in err
  assert "point filter-length-0-30" in err
  assert (straight / "results.json").read_bytes() == before


def test_an_unknown_override_key_is_named(scored, tmp_path, capsys):
  bad = _write_sweep(tmp_path / "bad.py", scored,
                     points=("data.filtr={'score': 'random'}",))
  assert cli.main(_argv(bad, tmp_path / "w")) == 2
  err = capsys.readouterr().err
  assert "'data.filtr'" in err and "sweep point filtr-random" in err
  assert "Did you mean 'filter'?" in err
  assert not (tmp_path / "w").exists()


def test_the_paper_grids_load_at_both_scales():
  for spec, n in (("length.py:gran", 14), ("cost.py:avg", 10),
                  ("overlap.py:gran,bleu", 10), ("random.py:avg", 3),
                  ("overlap.py:avg,overlap_2,ranges", 15),
                  ("lm_ppl.py:gran", 11), ("ref_prob.py:avg", 10)):
    path = str(ROOT / "configs" / "sweeps" / spec)
    small = sweep_lib.points(config_lib.load(path))
    paper = sweep_lib.points(config_lib.load(
        path, ["--config.max_pairs=24000", "--config.scored=x.jsonl"]))
    assert len(small) == len(paper) == n
    assert small[0].config.data.max_pairs == 2000
    assert small[0].config.train_steps == 160
    assert paper[0].config.data.max_pairs == 24000
    assert paper[0].config.train_steps == 1920
    assert paper[0].config.data.task == "backtranslated:x.jsonl"


def _filters(spec: str) -> list[dict]:
  path = str(ROOT / "configs" / "sweeps" / spec)
  return [p.config.data.filter.to_dict()
          for p in sweep_lib.points(config_lib.load(path))]


def test_the_overlap_grid_takes_upper_bounds_too():
  ranges = _filters("overlap.py:gran,bleu,ranges")
  assert {f["score"] for f in ranges} == {"bleu"}
  assert [(f["lo"], f["hi"]) for f in ranges][:5] == [
      (0.0, 0.6), (0.0, 0.8), (0.0, 0.9), (0.0, 1.0), (0.2, 0.6)]
  assert all(f["lo"] < f["hi"] for f in ranges)
  assert {f["hi"] for f in _filters("overlap.py:avg")} == {1.0}
  with pytest.raises(ValueError, match="then optionally ranges"):
    _filters("overlap.py:avg,ranges,bleu")


def test_the_lm_ppl_and_ref_prob_grids_bound_their_scores():
  ppl = _filters("lm_ppl.py:avg")
  assert [f["hi"] for f in ppl] == [10, 15, 20, 25, 30, 40, 50, 75, 100, 200,
                                    500]
  assert {(f["score"], f["lo"]) for f in ppl} == {("lm_ppl", 0.0)}
  prob = _filters("ref_prob.py:gran")
  assert [f["lo"] for f in prob] == [k / 10 for k in range(10)]
  assert {(f["score"], f["hi"]) for f in prob} == {("ref_prob", 1.0)}


def test_the_cost_grid_divides_by_subwords_or_by_the_papers_tokens():
  assert {f["score"] for f in _filters("cost.py:avg")} == {"cost"}
  assert {f["score"] for f in _filters("cost.py:avg,subword")} == {"cost"}
  token = _filters("cost.py:gran,token")
  assert {f["score"] for f in token} == {"cost_token"} and len(token) == 10
  with pytest.raises(ValueError, match="subword or token"):
    _filters("cost.py:gran,word")


def test_the_paper_points_give_wieting2017s_grids_and_training():
  """`:paper`: overlap / BLEU {0, .1, .2, .3} x {.6, .7, .8, .9, 1} and LM
  {25, ..., 200, inf}, each point trained as configs/papers/wieting2017.py
  (mini-batch negatives, batches of 100, margin 0.4)."""
  bleu = _filters("overlap.py:gran,bleu,paper")
  assert [(f["lo"], f["hi"]) for f in bleu] == [
      (lo, hi) for lo in (0.0, 0.1, 0.2, 0.3)
      for hi in (0.6, 0.7, 0.8, 0.9, 1.0)]
  assert {f["score"] for f in bleu} == {"bleu"}
  ppl = _filters("lm_ppl.py:avg,paper")
  assert [float(f["hi"]) for f in ppl] == [25, 50, 75, 100, 125, 150, 175,
                                           200, float("inf")]
  for spec in ("overlap.py:gran,overlap_1,paper", "lm_ppl.py:avg,paper"):
    path = str(ROOT / "configs" / "sweeps" / spec)
    points = sweep_lib.points(config_lib.load(path))
    for point in points[-1:]:
      c = point.config
      assert (c.megabatch, c.batch_size, c.loss.margin) == (1, 100, 0.4)
      assert c.train_steps == 2000 * 8 // 100
    big = sweep_lib.points(config_lib.load(path, ["--config.max_pairs=24000"]))
    assert big[0].config.train_steps == 24000 * 8 // 100
  with pytest.raises(ValueError, match="optionally paper"):
    _filters("lm_ppl.py:avg,ranges")


def test_a_point_that_fails_leaves_the_others_and_the_table(scored, tmp_path,
                                                            capsys):
  few = "data.filter={'score': 'length', 'lo': 0, 'hi': 3}"  # < 100 pairs
  config = _write_sweep(tmp_path / "few.py", scored, points=(few,))
  assert cli.main(_argv(config, tmp_path / "w")) == 2
  assert "1 sweep point(s) failed (filter-length-0-3)" in (
      capsys.readouterr().err)
  [row] = _table(tmp_path / "w")["points"]
  assert row["status"].startswith("failed: ") and "data.max_pairs" in (
      row["status"])
  assert "failed: " in (tmp_path / "w" / "results.md").read_text()


def test_the_gran_ablations_vary_one_setting_of_configs_gran_on_two_seeds(
    tmp_path, monkeypatch):
  """configs/sweeps/gran_ablations.py: configs/gran.py (its PPDB words in
  place) with one setting varied, each value on seeds 0 and 1."""
  monkeypatch.chdir(tmp_path)
  vectors = tmp_path / "runs" / "ppdb_words" / "word_vectors.txt"
  vectors.parent.mkdir(parents=True)
  vectors.write_text("the 0.1 0.2\n")
  path = str(ROOT / "configs" / "sweeps" / "gran_ablations.py")
  points = lambda arg: [p.config for p in sweep_lib.points(
      config_lib.load(f"{path}:{arg}"))]
  margin = points("margin")
  assert [(c.loss.margin, c.seed) for c in margin] == [
      (m, s) for m in (0.4, 0.6, 0.8, 1.0) for s in (0, 1)]
  assert {(c.loss.scramble, c.batch_size, c.train_steps)
          for c in margin} == {(0.3, 50, 1280)}
  mixture = points("mixture")
  assert (mixture[0].data.task, mixture[0].data.mixture) == (
      "paraphrase_en_human", ())
  assert dict(mixture[-1].data.mixture)["paraphrase_en_ppdb_lexical"] == 0.15
  assert {c.batch_size * c.train_steps for c in points("batch")} == {
      64000, 96000}
  with pytest.raises(ValueError, match="use one of scramble, margin"):
    points("lr")
