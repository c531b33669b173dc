"""Training settings are checked from the config alone, before a workdir
gets any file; a start that saved no checkpoint does not block its fix;
config files that exit or raise are ConfigErrors; workdir configs carry a
schema version; the Python API checks its inputs as the command line does.

Every test here runs without training (the model methods run on a stand-in
encoder), so the file takes seconds.
"""
import json
import math

import numpy as np
import pytest

import paraflax
from paraflax import cli
from paraflax import config as config_lib
from paraflax import errors
from paraflax.recipes import settings
from paraflax.recipes import train as train_lib
from paraflax.recipes import workdir as workdir_lib
from tests.conftest import BILINGUAL_TINY, ROOT, TINY, TINY_NMT

GRAN = str(ROOT / "configs" / "gran.py")
RECIPES = {  # every training recipe's config, with its tiny overrides
    "gran": (GRAN, TINY),
    "avg": (str(ROOT / "configs" / "avg.py"), ()),
    "nmt": (str(ROOT / "configs" / "nmt.py") + ":de", TINY_NMT),
    "bilingual": (str(ROOT / "configs" / "bilingual.py") + ":de",
                  BILINGUAL_TINY),
    "ref_classifier": (str(ROOT / "configs" / "ref_classifier.py") + ":lstm",
                       ()),
    "mlp_similarity": (str(ROOT / "configs" / "mlp_similarity.py"), ()),
}


def _train(workdir, *overrides, spec=GRAN, tiny=TINY) -> int:
  return cli.main(["train", "--config", spec, "--workdir", str(workdir),
                   *tiny, *overrides])


# --- Settings checked before a workdir is created ---------------------------


@pytest.mark.parametrize("override, key", [
    ("batch_size=0", "batch_size=0"),
    ("data.max_len=0", "data.max_len=0"),
    ("model.word_dim=0", "model.word_dim=0"),
    ("model.hidden=-3", "model.hidden=-3"),
    ("optimizer.learning_rate=nan", "optimizer.learning_rate=nan"),
    ("optimizer.learning_rate=-0.5", "optimizer.learning_rate=-0.5"),
    ("optimizer.learning_rate=inf", "optimizer.learning_rate=inf"),
    ("optimizer.warmup_steps=-1", "optimizer.warmup_steps=-1"),
    ("loss.scramble=1.5", "loss.scramble=1.5"),
    ("megabatch=0", "megabatch=0"),
])
def test_a_setting_out_of_range_stops_before_the_workdir(override, key,
                                                         tmp_path, capsys):
  workdir = tmp_path / "w"
  assert _train(workdir, f"--config.{override}") == cli.EXIT_BAD_INPUT
  err = capsys.readouterr().err
  line = next(l for l in err.splitlines() if "error:" in l)
  assert key in line and f"set --config.{key.split('=')[0]}" in line
  assert "Traceback" not in err
  assert not workdir.exists()


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_every_recipe_config_is_in_range_and_its_rates_are_checked(recipe):
  spec, tiny = RECIPES[recipe]
  config = config_lib.load(spec, tiny)
  assert not settings.problems(config)
  key = "learning_rate" if recipe == "mlp_similarity" else \
      "optimizer.learning_rate"
  bad = config_lib.load(spec, (*tiny, f"--config.{key}=-0.5",
                               "--config.batch_size=0"))
  with pytest.raises(errors.ConfigError) as e:
    settings.check(bad)
  assert f"{key}=-0.5" in str(e.value) and "batch_size=0" in str(e.value)


def test_train_mlp_checks_its_settings_before_the_model_loads(tmp_path):
  """The check runs before the (missing) workdir is read."""
  from paraflax.recipes import mlp_similarity  # pylint: disable=g-import-not-at-top
  from paraflax.inference import scoring  # pylint: disable=g-import-not-at-top
  config = mlp_similarity.default_config(learning_rate=float("nan"))
  with pytest.raises(errors.ConfigError, match="learning_rate=nan"):
    scoring.train_mlp_for_workdir(str(tmp_path / "none"), config)


def test_a_sweep_point_out_of_range_stops_before_any_point(tmp_path):
  from paraflax.inference import sweep  # pylint: disable=g-import-not-at-top
  import ml_collections  # pylint: disable=g-import-not-at-top
  grid = ml_collections.ConfigDict({
      "base": "configs/avg.py", "settings": {}, "overrides": (),
      "points": (("batch_size=10",), ("batch_size=0",)), "axes": (),
      "columns": ()})
  with pytest.raises(errors.ConfigError,
                     match="sweep point .*batch_size=0 must be"):
    sweep.points(grid)


def test_a_backtranslated_task_without_pairs_is_a_data_error(tmp_path,
                                                             capsys):
  records = tmp_path / "bt.jsonl"  # one hypothesis, none of rank 0
  records.write_text(json.dumps({"id": 0, "reference": "A man.",
                                 "translation": "A guy.", "rank": 1,
                                 "cost": 1.0}) + "\n")
  workdir = tmp_path / "w"
  assert _train(workdir, f"--config.data.task=backtranslated:{records}"
                ) == cli.EXIT_BAD_INPUT
  err = capsys.readouterr().err
  assert f"error: {records}: no pairs to train on" in err
  assert "Traceback" not in err and not workdir.exists()


# --- A start without a checkpoint does not block its fix -------------------


def _started(workdir, config) -> None:
  """What a start that stopped before its first checkpoint leaves."""
  workdir_lib.save_config(str(workdir), config)
  (workdir / "vocab.txt").write_text("<pad>\n<unk>\nold\n")
  (workdir / "checkpoints" / "8.orbax-checkpoint-tmp-1").mkdir(parents=True)
  (workdir / "best").mkdir()


def test_a_changed_config_replaces_a_start_only_without_checkpoint(tmp_path,
                                                              capsys):
  workdir = tmp_path / "w"
  config = config_lib.load(GRAN, TINY)
  with config.unlocked():
    config.optimizer.learning_rate = 1e6  # diverged at once, say
  _started(workdir, config)
  (workdir / "notes.txt").write_text("mine")  # not a file a start writes
  fixed = config_lib.load(GRAN, TINY)
  workdir_lib.check_same_experiment(str(workdir), fixed)
  assert ("no checkpoint yet, so this config replaces the one of its "
          "earlier start (differs in: optimizer)") in capsys.readouterr().err
  assert sorted(p.name for p in workdir.iterdir()) == ["notes.txt"]
  workdir_lib.save_config(str(workdir), fixed)
  workdir_lib.check_same_experiment(str(workdir), fixed)  # the same now
  (workdir / "checkpoints" / "8").mkdir(parents=True)  # a committed step
  with pytest.raises(errors.ConfigError, match="differs in: optimizer"):
    workdir_lib.check_same_experiment(str(workdir), config)
  assert (workdir / workdir_lib.CONFIG_FILE).exists()


def test_the_started_files_are_those_the_recipes_write():
  from paraflax.data import sentencepiece_vocab  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import paraphrase  # pylint: disable=g-import-not-at-top
  from paraflax.training import checkpointing  # pylint: disable=g-import-not-at-top
  from paraflax.training import metrics  # pylint: disable=g-import-not-at-top
  assert {workdir_lib.CONFIG_FILE, checkpointing.LATEST, checkpointing.BEST,
          metrics.JSONL, paraphrase.VOCAB_FILE, sentencepiece_vocab.SRC_MODEL,
          sentencepiece_vocab.TGT_MODEL} <= set(workdir_lib.STARTED)


# --- Config files that exit or raise ---------------------------------------


@pytest.mark.parametrize("body, found", [
    ("import sys\nsys.exit(0)\n", "exits (sys.exit(0))"),
    ("def get_config():\n  raise SystemExit(3)\n", "exits (sys.exit(3))"),
    ("from paraflax import errors\ndef get_config():\n"
     "  raise errors.ConfigError('no such language')\n",
     "ConfigError: no such language"),
])
def test_a_config_file_that_exits_or_raises_is_a_config_error(
    body, found, tmp_path, capsys):
  path = tmp_path / "bad.py"
  path.write_text(body)
  with pytest.raises(errors.ConfigError, match=r"bad\.py:\d+: .*" +
                     found.replace("(", r"\(").replace(")", r"\)")):
    config_lib.load_file(str(path))
  code = cli.main(["train", "--config", str(path), "--workdir",
                   str(tmp_path / "w")])
  assert code == cli.EXIT_BAD_INPUT
  assert "bad.py" in capsys.readouterr().err
  assert not (tmp_path / "w").exists()


# --- Workdir configs carry a schema version --------------------------------


def test_config_json_records_the_schema_version(tmp_path):
  config = config_lib.load(GRAN, TINY)
  workdir_lib.save_config(str(tmp_path), config)
  saved = json.loads((tmp_path / workdir_lib.CONFIG_FILE).read_text())
  assert saved[workdir_lib.VERSION_KEY] == workdir_lib.SCHEMA_VERSION
  read = workdir_lib.read_config(str(tmp_path))
  assert workdir_lib.VERSION_KEY not in read
  assert json.loads(read.to_json()) == json.loads(config.to_json())


def test_upgrades_run_past_the_recorded_version_only(tmp_path):
  """A workdir of version 9 lacks only what version 10 brings; one without
  a version (written before versions were recorded) takes every upgrade."""
  config = config_lib.load(str(ROOT / "configs" / "nmt.py") + ":de")
  saved = json.loads(config.to_json())
  del saved["model"]["encoder_hidden"]
  del saved["decode"]["max_output_ratio"]
  old = workdir_lib.upgrade(saved)
  assert old["model"]["encoder_hidden"] is None
  assert old["decode"]["max_output_ratio"] == 0.0
  at_9 = workdir_lib.upgrade({workdir_lib.VERSION_KEY: 9, **saved})
  assert at_9["model"]["encoder_hidden"] is None
  assert "max_output_ratio" not in at_9["decode"]  # not an upgrade past 9
  assert sorted(workdir_lib._UPGRADES) == list(  # pylint: disable=protected-access
      range(1, workdir_lib.SCHEMA_VERSION + 1))


def test_a_bilingual_workdir_of_before_the_decoder_start_key_resumes():
  config = config_lib.load(str(ROOT / "configs" / "bilingual.py") + ":de")
  saved = json.loads(config.to_json())
  del saved["model"]["decoder_start"]
  old = workdir_lib.upgrade({workdir_lib.VERSION_KEY: 13, **saved})
  assert old == json.loads(config.to_json())
  assert old["model"]["decoder_start"] == "bridge"


def test_workdir_comments_cite_no_work_items():
  text = (ROOT / "paraflax" / "recipes" / "workdir.py").read_text()
  assert "issue" not in text.lower() and "session" not in text.lower()


# --- The Python API checks as the command line does -------------------------


class _Encoder:
  """A stand-in encoder: one row per sentence."""

  def __call__(self, texts, lang):
    del lang
    return np.ones((len(texts), 4), np.float32)


@pytest.fixture
def model(tmp_path):
  """A paraphrase Model on a stand-in encoder (nothing restored)."""
  (tmp_path / workdir_lib.CONFIG_FILE).write_text(
      json.dumps({"recipe": "paraphrase"}))
  m = object.__new__(paraflax.Model)
  m.workdir, m.recipe, m.step = str(tmp_path), "paraphrase", 0
  m.config, m._embed, m._translator = None, _Encoder(), None  # pylint: disable=protected-access
  return m


@pytest.fixture
def translator_model(tmp_path):
  """An nmt Model whose translator must never be reached."""
  m = object.__new__(paraflax.Model)
  m.workdir, m.recipe, m.step = str(tmp_path), "nmt", 0
  m.config, m._embed, m._translator = None, None, (object(), None, 0)  # pylint: disable=protected-access
  return m


def test_embed_takes_a_list_of_sentences_not_a_str(model):
  assert model.embed(["A man.", "A dog."]).shape == (2, 4)
  assert model.embed(np.array(["A man."])).shape == (1, 4)
  assert model.embed(t for t in ["A man."]).shape == (1, 4)
  with pytest.raises(paraflax.DataError, match=r"pass a list: \[texts\]"):
    model.embed("A man.")  # not 6 rows, one per character


@pytest.mark.parametrize("texts, found", [
    ("A man is playing.", r"texts is one str \('A man is playing.'\), not a "
     r"list of sentences; pass a list: \[texts\]"),
    (b"A man.", "texts is one bytes"),
    ([], "texts is empty: no sentence to embed"),
    ([""], r"texts\[0\] is an empty sentence"),
    (["A man.", "  "], r"texts\[1\] is an empty sentence"),
    (["A man.", 3], r"texts\[1\] is 3 \(int\), not a str"),
    (["A man.", None], r"texts\[1\] is None \(NoneType\), not a str"),
    (7, r"texts is 7 \(int\), not a list of sentences"),
])
def test_embed_refuses_what_the_command_line_refuses(model, texts, found):
  with pytest.raises(paraflax.DataError, match=found):
    model.embed(texts)


@pytest.mark.parametrize("texts, found", [
    ("Ein Mann.", "texts is one str"),
    ([], "texts is empty: no sentence to translate"),
    (["Ein Mann.", 1.5], r"texts\[1\] is 1.5 \(float\), not a str"),
])
def test_translate_refuses_a_str_and_non_strings(translator_model, texts,
                                                  found):
  with pytest.raises(paraflax.DataError, match=found):
    translator_model.translate(texts)


def test_score_pairs_refuses_a_str_and_empty_sentences(model):
  model.recipe = "bilingual"
  with pytest.raises(paraflax.DataError, match="src is one str"):
    model.score_pairs("Ein Mann.", ["A man."])
  with pytest.raises(paraflax.DataError, match=r"tgt\[0\] is an empty"):
    model.score_pairs(["Ein Mann."], [""])


@pytest.mark.parametrize("threshold", [math.nan, math.inf, -math.inf, "0.5",
                                       True])
def test_mine_refuses_a_threshold_that_is_not_a_finite_number(threshold):
  x = np.random.default_rng(0).normal(size=(6, 4)).astype(np.float32)
  with pytest.raises(paraflax.ConfigError, match="threshold"):
    paraflax.mine(x, x, k=2, threshold=threshold)
  with pytest.raises(paraflax.ConfigError, match="threshold"):
    paraflax.mine(x, x, k=2, retrieval="fwd", threshold=threshold)


def test_mine_refuses_embeddings_that_are_not_numbers():
  x = np.ones((3, 2), np.float32)
  with pytest.raises(paraflax.DataError, match="x holds <U"):
    paraflax.mine([["a", "b"]], x, k=1)
  with pytest.raises(paraflax.DataError, match="y is not an array"):
    paraflax.candidates(x, [[1.0, 2.0], [3.0]], k=1)
  assert len(paraflax.mine(x + np.eye(3, 2), x, k=1, threshold=0.0).src)
