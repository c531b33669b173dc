"""The data stages on Apache Beam (DirectRunner): `paraflax beam-score`
gives the bytes of `score-paraphrases` (with lm_ppl), its filtered output
the pairs of the filtered Task, a killed run resumes to the same bytes,
bad input stops as in-process; `paraflax cache-task` (seqio's Beam
caching) gives a cache the Task reads back as the same examples.

Records: real English pairs (Wiki-Auto: complex sentence as reference,
its 8 simplifications as ranks 0-7 of the translation), in blocks of
_BLOCK records; the LM: a 3-gram of Multi30k val English."""
import gzip
import json
import pathlib
import signal
import subprocess
import sys

import pytest

from paraflax import errors
from paraflax import faults
from paraflax.data import paths
from paraflax.filtering import lm as lm_lib
from paraflax.filtering import score_paraphrases
from paraflax.inference import score_paraphrases as recipe

ROOT = pathlib.Path(__file__).resolve().parents[1]
_RECORDS = 1200  # 150 references x 8 ranks
_BLOCK = 250  # 5 blocks, the last one short
_FILTER, _FILTER_DICT = "overlap_1,0.3,0.95", dict(score="overlap_1", lo=0.3,
                                                   hi=0.95)
_MAX_PAIRS, _SEED = 40, 3


@pytest.fixture(scope="module", autouse=True)
def blocks_of_block():
  saved, score_paraphrases.BLOCK = score_paraphrases.BLOCK, _BLOCK
  yield
  score_paraphrases.BLOCK = saved


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> pathlib.Path:
  return tmp_path_factory.mktemp("beam")


@pytest.fixture(scope="module")
def bt(folder) -> pathlib.Path:
  with gzip.open(paths.data_path(
      "wikiauto_simplification",
      "gem2021_full_no_split.valid.complex_simple.tsv.gz"), "rt",
                 encoding="utf-8") as f:
    rows = [next(f).rstrip("\n").split("\t") for _ in range(_RECORDS)]
  path = folder / "bt.jsonl"
  path.write_text("".join(
      json.dumps({"id": i // 8, "reference": complex_, "translation": simple,
                  "rank": i % 8, "cost": round(len(simple) / 97, 3)},
                 ensure_ascii=False) + "\n"
      for i, (complex_, simple) in enumerate(rows)), "utf-8")
  return path


@pytest.fixture(scope="module")
def lm(folder) -> str:
  """A 3-gram of Multi30k val English (KenLM's lmplz: launch/build_kenlm.sh)."""
  with gzip.open(paths.data_path("multi30k_task1", "val.en.gz"), "rt",
                 encoding="utf-8") as f:
    (folder / "lm.txt").write_text(f.read(), "utf-8")
  lm_lib.train_lm(str(folder / "lm.txt"), str(folder / "lm.binary"))
  return str(folder / "lm.binary")


@pytest.fixture(scope="module")
def straight(bt, lm, folder) -> pathlib.Path:
  out = folder / "straight.jsonl"
  recipe.score_file(str(bt), str(out), lm=lm)
  return out


@pytest.fixture(scope="module")
def beamed(bt, lm, folder) -> tuple[pathlib.Path, pathlib.Path]:
  out, kept = folder / "beam.jsonl", folder / "kept.jsonl"
  assert recipe.beam_score_file(
      str(bt), str(out), lm=lm, filtered_output=str(kept), filter=_FILTER,
      max_pairs=_MAX_PAIRS, seed=_SEED) == 5
  return out, kept


def test_beam_gives_the_bytes_of_the_in_process_path(straight, beamed):
  out, _ = beamed
  assert out.read_bytes() == straight.read_bytes()
  first = json.loads(out.read_text("utf-8").splitlines()[0])
  assert "lm_ppl" in first["scores"]
  assert not (out.parent / "beam.jsonl.parts").exists()  # cleaned up


def test_the_filtered_output_is_the_filtered_tasks_pairs(beamed):
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  out, kept = beamed
  name = tasks.register_backtranslated(str(out), _FILTER_DICT, _MAX_PAIRS,
                                       _SEED)
  expected = [(e["sentence1"], e["sentence2"])
              for e in tasks.examples(name, "train")]
  records = [json.loads(l) for l in kept.read_text("utf-8").splitlines()]
  assert len(expected) == _MAX_PAIRS
  assert [(r["reference"], r["translation"]) for r in records] == expected
  lines = set(out.read_text("utf-8").splitlines())
  assert set(kept.read_text("utf-8").splitlines()) <= lines  # whole records


_RUN = ("import sys\nfrom paraflax import cli\n"
        "from paraflax.filtering import score_paraphrases\n"
        f"score_paraphrases.BLOCK = {_BLOCK}\n"
        "sys.exit(cli.main(sys.argv[1:]))\n")


def test_a_killed_run_resumes_to_the_same_bytes(bt, lm, straight, tmp_path):
  out = tmp_path / "killed.jsonl"
  argv = ["beam-score", "--input", str(bt), "--output", str(out), "--lm", lm]
  env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
         faults.ENV: "beam_scoring.block:2"}
  killed = subprocess.run([sys.executable, "-c", _RUN, *argv], env=env,
                          capture_output=True, text=True, timeout=120)
  assert killed.returncode == -signal.SIGKILL, killed.stderr
  assert not out.exists()
  parts = list((tmp_path / "killed.jsonl.parts").glob("*/scored-*.jsonl"))
  assert len(parts) == 2  # whole, under their final names
  assert recipe.beam_score_file(str(bt), str(out), lm=lm) == 3  # 2 reused
  assert out.read_bytes() == straight.read_bytes()


def test_bad_input_stops_as_in_process_and_writes_nothing(bt, tmp_path):
  bad = tmp_path / "bad.jsonl"
  lines = bt.read_text("utf-8").splitlines(keepends=True)
  bad.write_text("".join(lines[:600]) + "{not json\n" + "".join(lines[600:]),
                 "utf-8")
  messages = []
  for run in (recipe.score_file, recipe.beam_score_file):
    with pytest.raises(errors.DataError) as e:
      run(str(bad), str(tmp_path / f"{run.__name__}.jsonl"))
    messages.append(str(e.value))
  assert messages[0] == messages[1] and f"{bad}:601: not JSON" in messages[0]
  assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_the_block_scorers_come_from_a_picklable_factory(lm):
  import pickle  # pylint: disable=g-import-not-at-top
  import functools  # pylint: disable=g-import-not-at-top
  factory = functools.partial(recipe.block_scorers, None, lm)
  (scorer,) = pickle.loads(pickle.dumps(factory))()
  assert scorer.name == "lm_ppl"


def test_the_seqio_cache_yields_the_tasks_examples(beamed, tmp_path):
  from paraflax.data import task_cache  # pylint: disable=g-import-not-at-top
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  out, _ = beamed
  cache = tmp_path / "cache"
  found = task_cache.cache_task(f"{tasks.BACKTRANSLATED}{out}", str(cache),
                                filter=_FILTER, max_pairs=_MAX_PAIRS,
                                seed=_SEED, shards=3)
  assert len(list(pathlib.Path(found).glob("train.tfrecord-*-of-00003"))) == 3
  name = tasks.register_backtranslated(str(out), _FILTER_DICT, _MAX_PAIRS,
                                       _SEED)
  cached = tasks.examples(name, "train", cache_dir=str(cache))
  assert cached == tasks.examples(name, "train")  # same pairs, same order
  assert len(cached) == _MAX_PAIRS
  with pytest.raises(errors.ConfigError, match="paraflax cache-task"):
    tasks.examples(tasks.register_backtranslated(str(out), None, 7, 0),
                   "train", cache_dir=str(cache))
