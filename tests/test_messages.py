"""Messages, not tracebacks: interrupts, flags given twice, errors of the
libraries underneath (TensorFlow, faiss) and of the Python API, each as one
paraflax message that names the fix."""
from __future__ import annotations

import os
import re

import pytest

from paraflax import cli


def test_ctrl_c_prints_one_line_with_what_is_kept_and_the_command(
    monkeypatch, capsys):
  def interrupted(*args, **kwargs):
    raise KeyboardInterrupt
  monkeypatch.setattr(cli, "_call", interrupted)
  argv = ["mine", "--src-emb", "x.f32", "--tgt-emb", "y.f32", "--dim", "4",
          "--output", "out.tsv"]
  assert cli.main(argv) == cli.EXIT_INTERRUPTED == 130
  err = capsys.readouterr().err
  assert err.count("\n") == 1 and "Traceback" not in err, err
  assert err.startswith("paraflax mine: interrupted. The finished k-NN "
                        "blocks are kept in OUTPUT.parts/"), err
  assert err.rstrip().endswith("paraflax mine --src-emb x.f32 --tgt-emb "
                               "y.f32 --dim 4 --output out.tsv"), err


@pytest.mark.parametrize("argv, named", [
    (["mine", "--k", "3", "--output", "o", "--k", "4"], "--k"),
    (["mine", "--k=3", "--k", "4", "--output", "o"], "--k"),
    (["mine", "--dedup", "--no-dedup", "--output", "o"], "--no-dedup"),
    (["train", "--config", "a.py", "--config", "b.py", "--workdir", "w"],
     "--config"),
])
def test_a_flag_given_twice_is_refused(argv, named, capsys):
  with pytest.raises(SystemExit) as e:
    cli.main(argv)
  assert e.value.code == cli.EXIT_BAD_INPUT
  err = capsys.readouterr().err
  assert f"{named} given more than once" in err, err


def test_a_repeatable_flag_may_be_given_twice():
  command = cli.commands.COMMANDS["mine"]
  assert not cli.repeated_flags(command, ["--src-emb", "-5", "--dim", "4"])


@pytest.mark.parametrize("k, shown", [(2.5, r"k=2\.5 \(float\)"),
                                      (True, r"k=True \(bool\)"),
                                      ("3", r"k='3' \(str\)"),
                                      (0, r"k=0: pass an int >= 1")])
def test_api_counts_of_the_wrong_type_get_a_paraflax_error(k, shown):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import paraflax  # pylint: disable=g-import-not-at-top
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  x = np.eye(3, dtype=np.float32)
  for function in (paraflax.mine, paraflax.api.mining.candidates):
    with pytest.raises(errors.ConfigError, match=shown):
      function(x, x, k=k)


@pytest.mark.parametrize("extra, message", [
    (["--corpus", "bitext_nothing_de_en"],
     r"bitext_nothing_de_en: not a catalogued corpus"),
    (["--third", "mono_en_brown"],
     r"--third mono_en_brown: .* not bitext \(source, target\)"),
    (["--corpus", "tsv:{t}/none*.tsv"], r"none\*\.tsv"),
])
def test_noise_bitext_names_its_corpora_in_messages(extra, message, tmp_path,
                                                    capsys):
  import re  # pylint: disable=g-import-not-at-top
  argv = ["noise-bitext", "--output", str(tmp_path / "out.tsv"),
          *(a.format(t=tmp_path) for a in extra)]
  assert cli.main(argv) == cli.EXIT_BAD_INPUT
  err = capsys.readouterr().err
  assert err.startswith("paraflax noise-bitext: error: "), err
  assert re.search(message, err), err
  assert not list(tmp_path.iterdir())


def test_eval_filtering_checks_words_before_any_work(tmp_path):
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.inference import eval_filtering  # pylint: disable=g-import-not-at-top
  with pytest.raises(errors.ConfigError, match=r"--words -5: .* > 0"):
    eval_filtering.eval_filtering(str(tmp_path / "none"), str(tmp_path / "x"),
                                  str(tmp_path / "out"), [100, -5])
  assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("labels, message", [
    ("clean\nclean\n", r"2 labels for 3 lines"),
    ("clean\nclean\nclean\nshort\n", r"4 labels for 3 lines"),
    ("clean\nnoisy\nclean\n", r"noisy\.tsv\.labels:2: label 'noisy'"),
])
def test_eval_filtering_reads_a_labels_file_of_every_line(labels, message,
                                                          tmp_path):
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.inference import eval_filtering  # pylint: disable=g-import-not-at-top
  noisy = tmp_path / "noisy.tsv"
  noisy.write_text("a\tb\n" * 3, encoding="utf-8")
  (tmp_path / "noisy.tsv.labels").write_text(labels, encoding="utf-8")
  with pytest.raises(errors.DataError, match=message):
    eval_filtering.read_noisy(str(noisy))


@pytest.mark.parametrize("factory, rows, sample, message", [
    ("IVF1000,Flat", 400, None, r"at least 1,000 rows .* has 400: the corpus "
     r"has 400 rows: use fewer IVF clusters"),
    ("IVF16,Flat", 400, 3, r"at least 16 rows .* has 3: give --train-sample "
     r"16 or more"),
    ("PQ8", 100, None, r"at least 256 rows"),
])
def test_a_faiss_index_too_big_for_its_sample_is_refused_before_work(
    factory, rows, sample, message):
  import numpy as np  # pylint: disable=g-import-not-at-top
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.mining import index_build  # pylint: disable=g-import-not-at-top
  from paraflax.mining import index_spec  # pylint: disable=g-import-not-at-top
  emb = np.ones((rows, 32), np.float32)
  with pytest.raises(errors.ConfigError, match=message):
    index_build.planned(emb, index_spec.Spec(factory, train_sample=sample),
                        ())


def test_faiss_training_errors_and_warnings_are_paraflax_messages(capfd):
  import numpy as np  # pylint: disable=g-import-not-at-top
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.mining import index_spec  # pylint: disable=g-import-not-at-top
  x = index_spec.unit(np.random.default_rng(0).normal(size=(300, 32)))
  spec = index_spec.Spec("OPQ2,IVF1,PQ2")
  with index_spec.training(spec):
    index_spec.new_index(spec, 32).train(x)
  warnings = capfd.readouterr().err.splitlines()
  assert len(warnings) == 1 and "times)" in warnings[0], warnings
  spec = index_spec.Spec("IVF16,Flat")
  with pytest.raises(errors.ConfigError, match=r"'IVF16,Flat': faiss cannot "
                     r"train it \(.*Number of training points \(3\)"):
    with index_spec.training(spec):
      index_spec.new_index(spec, 32).train(x[:3])


def test_a_data_error_inside_tensorflow_is_the_one_message(tmp_path):
  """jax loaded before TensorFlow (as `train` does): the DataError of a
  file that tf.data reads is raised as itself, nothing printed before."""
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  path = tmp_path / "latin.tsv"
  path.write_bytes(b"Satz\tsentence\n" * 3 + "Straße\tstreet\n".encode(
      "latin-1"))
  script = f"""
from paraflax import quiet
quiet.quiet_native_logs()
import jax.numpy as jnp
jnp.zeros(1)
from paraflax import errors
from paraflax.data import specs, tasks
name = tasks.register_corpus(specs.parse("tsv:{path}").corpus)
try:
  list(tasks.iter_examples(name, "train"))
except errors.DataError as e:
  print(e)
"""
  env = {k: v for k, v in os.environ.items()
         if k not in ("TF_CPP_MIN_LOG_LEVEL", "PARAFLAX_VERBOSE")}
  done = subprocess.run([sys.executable, "-c", script], capture_output=True,
                        text=True, env={**env, "JAX_PLATFORMS": "cpu"},
                        timeout=120, check=True)
  assert "latin.tsv:4: invalid UTF-8" in done.stdout, done
  assert not done.stderr.strip(), done.stderr


@pytest.mark.parametrize("script", [
    "from paraflax import quiet\nquiet.quiet_native_logs()\nimport jax\n",
    "import numpy as np\nimport paraflax\nx = np.eye(4, dtype=np.float32)\n"
    "paraflax.mine(x, x, k=1)\nimport jax\n",
], ids=["command_line", "python_api"])
def test_a_cpu_host_with_libtpu_installed_starts_jax_without_its_errors(
    script):
  """The `tpu` extra (and the test extra) bring libtpu to CPU hosts for
  `paraflax compile`; jax left to probe for a TPU would start libtpu,
  which prints TPU_WORKER_HOSTNAMES and host-bounds errors, into a
  command's output or a user's notebook alike."""
  import importlib.util  # pylint: disable=g-import-not-at-top
  import subprocess  # pylint: disable=g-import-not-at-top
  import sys  # pylint: disable=g-import-not-at-top
  from paraflax import quiet  # pylint: disable=g-import-not-at-top
  if importlib.util.find_spec("libtpu") is None:
    pytest.skip("libtpu is not installed (pip install -e '.[tpu]')")
  if not quiet.cpu_only_host_with_libtpu():
    pytest.skip("this host has a TPU or a GPU")
  script += "print(jax.devices()[0].platform)"
  env = {k: v for k, v in os.environ.items()
         if k not in ("JAX_PLATFORMS", "TF_CPP_MIN_LOG_LEVEL")}
  done = subprocess.run([sys.executable, "-c", script], capture_output=True,
                        text=True, env=env, timeout=120, check=True)
  assert done.stdout.strip() == "cpu"
  assert not done.stderr.strip(), done.stderr


@pytest.mark.parametrize("spec, files", [
    ("tsv:{t}/end.tsv", {"end.tsv": "a\tb\nc\td\n\n"}),
    ("lines:{t}/x.de,{t}/x.en", {"x.de": "a\nb\n\n", "x.en": "c\nd\n\n"}),
])
def test_an_empty_line_of_a_spec_gets_a_fix_that_exists(spec, files,
                                                        tmp_path, capsys):
  for name, text in files.items():
    (tmp_path / name).write_text(text, encoding="utf-8")
  assert cli.main(["tasks", "--data", spec.format(t=tmp_path)]) == \
      cli.EXIT_BAD_INPUT
  err = capsys.readouterr().err
  assert re.search(r"(:| line )3", err) and "Remove" in err, err
  assert "policy" not in err and "catalogue" not in err, err


class _Store:
  """The coordination service's key-value store, as one process sees it."""

  def __init__(self, values):
    self.values = dict(values)

  def key_value_set(self, key, value):
    self.values[key] = value

  def blocking_key_value_get(self, key, timeout_ms):
    del timeout_ms
    return self.values[key]


@pytest.mark.parametrize("theirs, message", [
    ({"k": 4, "config": {"margin": "ratio"}}, r"process 1 runs with k = 4, "
     r"process 0 with 3\. Start every process"),
    ({"k": 3, "config": {"margin": "distance"}},
     r"config\.margin = 'distance', process 0 with 'ratio'"),
])
def test_distributed_processes_with_other_settings_stop_with_a_message(
    theirs, message, monkeypatch):
  """Process 1 of 2 started with other settings than process 0: the one
  exchange names the difference (before any collective could abort)."""
  import json  # pylint: disable=g-import-not-at-top
  import jax  # pylint: disable=g-import-not-at-top
  from jax._src import distributed as jax_distributed  # pylint: disable=g-import-not-at-top
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.training import distributed  # pylint: disable=g-import-not-at-top
  store = _Store({f"paraflax/settings/{i}/0": json.dumps(
      {"k": 3, "config": {"margin": "ratio"}}) for i in range(100)})
  monkeypatch.setattr(jax, "process_count", lambda: 2)
  monkeypatch.setattr(jax, "process_index", lambda: 1)
  monkeypatch.setattr(jax_distributed.global_state, "client", store)
  with pytest.raises(errors.ConfigError, match=message):
    distributed.check_same_settings(theirs)
  distributed.check_same_settings({"k": 3, "config": {"margin": "ratio"}})


def test_every_distributed_command_gives_its_settings_to_check(monkeypatch):
  from paraflax.training import distributed  # pylint: disable=g-import-not-at-top
  seen = {}
  monkeypatch.setattr(cli, "_function", lambda target: lambda **kw: None)
  monkeypatch.setattr(distributed, "expect_same_settings", seen.update)
  cli.main(["mine", "--src-emb", "x", "--tgt-emb", "y", "--dim", "4",
            "--output", "o.tsv", "--k", "5", "--distributed",
            "--process-id", "1"])
  assert seen["config"]["k"] == 5 and seen["output"] == "o.tsv", seen
  assert seen["process_id"] == 1  # dropped by expect_same_settings itself


def _nmt_workdir(tmp_path, lang: str = "de") -> str:
  import json  # pylint: disable=g-import-not-at-top
  workdir = tmp_path / "nmt"
  workdir.mkdir()
  (workdir / "config.json").write_text(json.dumps(
      {"recipe": "nmt", "lang": lang}), encoding="utf-8")
  return str(workdir)


@pytest.mark.parametrize("task, split, message", [
    ("bitext_multi30k_fr_en", None, r"--task bitext_multi30k_fr_en is fr-en "
     r"bitext, but .*nmt translates de-en"),
    ("tsv:{t}/x.tsv", "validation", r"--task tsv:.*x\.tsv --split "
     r"validation: .* names its rows itself; leave --split out"),
    ("bitext_multi30k_de_en:test_2016_flickr", "validation",
     r"names its rows itself"),
    ("mono_en_brown", None, r"--task mono_en_brown: .* not bitext"),
])
def test_backtranslate_refuses_a_task_it_would_misread(task, split, message,
                                                       tmp_path):
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.inference import translation  # pylint: disable=g-import-not-at-top
  (tmp_path / "x.tsv").write_text("a\tb\n", encoding="utf-8")
  with pytest.raises(errors.ConfigError, match=message):
    translation.backtranslate(_nmt_workdir(tmp_path), str(tmp_path / "o"),
                              task=task.format(t=tmp_path), split=split)
  assert not (tmp_path / "o").exists()


def test_backtranslate_reads_the_split_of_a_task_of_its_language(tmp_path):
  from paraflax.inference import translation  # pylint: disable=g-import-not-at-top
  workdir = _nmt_workdir(tmp_path)
  assert translation.task_split(workdir, "bitext_multi30k_de_en",
                                "validation") == "validation"
  (tmp_path / "x.tsv").write_text("a\tb\n", encoding="utf-8")
  assert translation.task_split(workdir, f"tsv:{tmp_path}/x.tsv",
                                None) == "train"


def test_a_workdir_resumes_with_its_own_saved_config(tmp_path, capsys):
  """`paraflax train --config W/config.json --workdir W`: the saved config
  is the one W was started with, so the run resumes (no difference)."""
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import workdir as workdir_lib  # pylint: disable=g-import-not-at-top
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  started = config_lib.load(os.path.join(root, "configs", "avg.py"),
                            ["--config.train_steps=80"])
  workdir = str(tmp_path / "w")
  workdir_lib.save_config(workdir, started)
  (tmp_path / "w" / "checkpoints").mkdir()  # as if it had trained
  saved = workdir_lib.as_current(config_lib.load(
      os.path.join(workdir, "config.json"), ["--config.train_steps=120"]))
  assert saved.train_steps == 120 and saved.model == started.model
  workdir_lib.check_same_experiment(workdir, saved)
  assert "differs" not in capsys.readouterr().err
  assert os.path.exists(os.path.join(workdir, "config.json"))


def _many_characters(n: int = 300, lines: int = 2000) -> list[str]:
  """Lines of `n` distinct CJK characters (no spaces), all of them used."""
  import random  # pylint: disable=g-import-not-at-top
  rng = random.Random(0)
  chars = [chr(0x4e00 + i) for i in range(n)]
  return ["".join(chars[(i * 7 + j) % n] if j % 3 else rng.choice(chars)
                  for j in range(30)) for i in range(lines)]


def test_a_vocabulary_too_small_for_the_script_names_the_keys():
  """As sentencepiece counts: 300 characters and the word start need 301
  pieces and 3 special ones; one fewer is refused with both keys."""
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.data import sentencepiece_vocab  # pylint: disable=g-import-not-at-top
  texts = _many_characters()
  sentencepiece_vocab.check_size(texts, 304)
  with pytest.raises(errors.ConfigError, match=(
      r"vocab\.size=303: the training text has 301 distinct characters .* "
      r"Set --config\.vocab\.size=304 or more, or "
      r"--config\.vocab\.character_coverage=0\.99\d* or less")):
    sentencepiece_vocab.check_size(texts, 303)
  sentencepiece_vocab.check_size(texts, 250, coverage=0.8)


def test_the_size_check_agrees_with_sentencepiece(tmp_path):
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.data import sentencepiece_vocab  # pylint: disable=g-import-not-at-top
  texts = _many_characters(lines=400)
  for size in (303, 304):
    try:
      sentencepiece_vocab.check_size(texts, size)
      refused = False
    except errors.ConfigError:
      refused = True
    try:
      sentencepiece_vocab.train(texts, vocab_size=size,
                                cache_dir=tmp_path / "spm", minloglevel=2)
      failed = False
    except RuntimeError:
      failed = True
    assert refused == failed, size


def _pipeline_config(tmp_path, lines: list[str], *extra: str):
  """The tiny pipeline on a new pair whose four splits hold `lines`."""
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  specs = {}
  for split in ("train", "dev", "mining_dev", "mining_test"):
    tsv = tmp_path / f"ja-en.{split}.tsv"
    tsv.write_text("".join(f"{line}{split}\tline {i} {split}\n"
                           for i, line in enumerate(lines)), encoding="utf-8")
    specs[split] = f"tsv:{tsv}"
  return config_lib.load(os.path.join(root, "configs", "pipeline.py:tiny"), [
      "--config.lang=ja", f"--config.data.train={specs['train']}",
      f"--config.data.dev={specs['dev']}",
      f"--config.mining.dev={specs['mining_dev']}",
      f"--config.mining.test={specs['mining_test']}", *extra])


def test_the_pipeline_fits_mining_sizes_to_the_usable_rows(tmp_path, caplog):
  """Benchmark bitext of fewer usable rows than gold + 2 x distractors: both
  benchmarks draw sizes cut in the same proportion, with a warning; sizes
  that fit are kept."""
  from paraflax.pipeline import planning  # pylint: disable=g-import-not-at-top
  config = _pipeline_config(tmp_path, [f"猫{i}" for i in range(50)])
  planning.plan(config, str(tmp_path / "w"))
  assert (config.mining.gold, config.mining.distractors) == (15, 17)
  assert re.search(
      r"mining\.dev: tsv:.*ja-en\.mining_dev\.tsv has 50 usable rows .* "
      r"fewer than the 1,000 that 300 gold pairs and 350 distractors a side "
      r"draw: both benchmarks draw 15 gold pairs and 17 distractors a side "
      r"instead\. --config\.mining\.gold and --config\.mining\.distractors",
      caplog.text)
  config = _pipeline_config(tmp_path, [f"猫{i}" for i in range(50)],
                            "--config.mining.gold=20",
                            "--config.mining.distractors=15")
  planning.plan(config, str(tmp_path / "w"))
  assert (config.mining.gold, config.mining.distractors) == (20, 15)
  assert not (tmp_path / "w").exists()


def test_the_pipeline_plans_the_vocabulary_against_the_script(tmp_path):
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.pipeline import planning  # pylint: disable=g-import-not-at-top
  sizes = ["--config.mining.gold=20", "--config.mining.distractors=15"]
  config = _pipeline_config(tmp_path, _many_characters(2100, 400), *sizes)
  with pytest.raises(errors.ConfigError, match=(
      r"nmt\.settings\.vocab\.size=2000: .* Set "
      r"--config\.nmt\.settings\.vocab\.size=\d+ or more, or "
      r"--config\.nmt\.settings\.vocab\.character_coverage=0\.9\d+ or "
      r"less")):
    planning.plan(config, str(tmp_path / "w"))
  config = _pipeline_config(
      tmp_path, _many_characters(2100, 400), *sizes,
      "--config.nmt.settings.vocab.character_coverage=0.9",
      "--config.bilingual.settings.vocab.character_coverage=0.9")
  planning.plan(config, str(tmp_path / "w"))


@pytest.mark.parametrize("lang, message", [
    ("fr", r"bilingual\.workdir .*w_fr embeds en/fr, but the preset tiny is "
     r"de-en"),
    ("de", None),
])
def test_the_pipeline_reuses_a_finished_bilingual_workdir(lang, message,
                                                          tmp_path):
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.pipeline import planning  # pylint: disable=g-import-not-at-top
  from paraflax.pipeline import stages  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import workdir as workdir_lib  # pylint: disable=g-import-not-at-top
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  given = str(tmp_path / f"w_{lang}")
  workdir_lib.save_config(given, config_lib.load_file(
      os.path.join(root, "configs", f"bilingual.py:{lang}")))
  config = config_lib.load(os.path.join(root, "configs", "pipeline.py:tiny"),
                           [f"--config.bilingual.workdir={given}"])
  if message:
    with pytest.raises(errors.ConfigError, match=message):
      planning.plan(config, str(tmp_path / "w"))
    return
  plan = planning.plan(config, str(tmp_path / "w"))
  assert stages.STAGES["bilingual"].units(plan) == 0
  assert stages.STAGES["nmt"].units(plan) == 2400


_DE_EN = [("Der Mann liest ein Buch.", "The man reads a book."),
          ("Eine Frau und ein Kind im Park.", "A woman and a child in the "
           "park."),
          ("Zwei Hunde spielen mit dem Ball.", "Two dogs play with the ball.")]
_JA_EN = [("猫が寝ている。", "The cat is sleeping."),
          ("男の人が本を読んでいる。", "A man is reading a book.")]


@pytest.mark.parametrize("rows, swapped", [
    (_DE_EN, False), (_JA_EN, False),
    ([(e, s) for s, e in _DE_EN], True), ([(e, s) for s, e in _JA_EN], True),
])
def test_an_english_side_that_does_not_look_english_is_named(rows, swapped,
                                                             tmp_path):
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.data import english_side  # pylint: disable=g-import-not-at-top
  tsv = tmp_path / "x.tsv"
  tsv.write_text("".join(f"{s}\t{e}\n" for s, e in rows * 5),
                 encoding="utf-8")
  spec = f"tsv:{tsv}"
  if not swapped:
    english_side.check(spec, "data.train:")
    return
  with pytest.raises(errors.ConfigError, match=(
      rf"data\.train: {spec}: its second column, the English one, does not "
      rf"look English \(.*\)\. If English is the first column, name the "
      rf"columns: {spec}:1,0; .* {spec}:0,1\.")):
    english_side.check(spec, "data.train:")
  english_side.check(spec + ":0,1", "data.train:")  # named: as told


@pytest.mark.parametrize("key", ("data.train", "mining.test"))
def test_the_pipeline_checks_english_sides_before_any_stage(key, tmp_path):
  import time  # pylint: disable=g-import-not-at-top
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.pipeline import planning  # pylint: disable=g-import-not-at-top
  swapped = tmp_path / "swapped.tsv"
  swapped.write_text("".join(f"{e} {i}\t{s}{i}\n" for i in range(10)
                             for s, e in _JA_EN), encoding="utf-8")
  sizes = ["--config.mining.gold=3", "--config.mining.distractors=3"]
  lines = [f"猫{i}" for i in range(50)]
  start = time.monotonic()
  with pytest.raises(errors.ConfigError, match=(
      rf"{key}: tsv:.*swapped\.tsv: its second column, the English one, "
      rf"does not look English .* tsv:.*swapped\.tsv:1,0;")):
    planning.plan(_pipeline_config(tmp_path, lines, *sizes,
                                   f"--config.{key}=tsv:{swapped}"),
                  str(tmp_path / "w"))
  assert time.monotonic() - start < 10
  planning.plan(_pipeline_config(tmp_path, lines, *sizes,
                                 f"--config.{key}=tsv:{swapped}:1,0"),
                str(tmp_path / "w"))
  assert not (tmp_path / "w").exists()


def test_eval_bilingual_refuses_data_of_another_pair(tmp_path):
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.inference import scoring  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import workdir as workdir_lib  # pylint: disable=g-import-not-at-top
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  workdir = str(tmp_path / "w")
  workdir_lib.save_config(workdir, config_lib.load_file(
      os.path.join(root, "configs", "bilingual.py:de")))
  with pytest.raises(errors.ConfigError, match=(
      r"--data bitext_multi30k_fr_en:test_2016_flickr is fr-en bitext, but "
      r".*w embeds de-en")):
    scoring.eval_bilingual(workdir,
                           data=["bitext_multi30k_fr_en:test_2016_flickr"])
  scoring.check_data_languages(
      workdir, ["bitext_multi30k_de_en:test_2016_flickr"], "--data")


def test_eval_bilingual_says_paracrawl_has_no_set_of_the_language():
  from paraflax.evaluation import bilingual as bilingual_eval  # pylint: disable=g-import-not-at-top
  report = {"lang": "ja", "checkpoint_step": 600, "plots": [],
            "paracrawl": [],
            "alignment": [{"set": "tsv:ja-en.tsv", "lang": "ja", "n": 100,
                           "similarity": "cosine", "src2tgt": 10.0,
                           "tgt2src": 20.0, "mean": 15.0}]}
  text = bilingual_eval.format_report(report)
  assert ("ParaCrawl: no human-judged ParaCrawl set for ja-en (the bundled "
          "ones: de-en, fr-en, cs-en)") in text
  assert "V vs the rest" not in text


@pytest.mark.parametrize("argv, message", [
    (["mine", "--metric", "l2"], r"--metric does nothing without --index"),
    (["mine", "--no-faiss-gpu"], r"--faiss-gpu does nothing without --index"),
    (["mine", "--src-lang", "de"], r"--src-lang does nothing without "
     r"--workdir"),
    (["backtranslate", "--workdir", "w", "--src", "s", "--ref", "r",
      "--split", "test"], r"--split does nothing without --task"),
    (["backtranslate", "--workdir", "w", "--task", "t", "--empty-lines",
      "drop"], r"--empty-lines does nothing without --src"),
])
def test_a_flag_that_does_nothing_in_its_mode_is_refused(argv, message,
                                                         monkeypatch, capsys):
  monkeypatch.setattr(cli, "_function", lambda target: lambda **kw: None)
  assert cli.main([*argv, "--output", "o"]) == cli.EXIT_BAD_INPUT
  assert re.search(message, capsys.readouterr().err)


def test_a_flag_acts_with_its_partner_from_the_config(monkeypatch):
  monkeypatch.setattr(cli, "_function", lambda target: lambda **kw: None)
  assert cli.main(["mine", "--metric", "l2", "--config.index=IVF4,Flat",
                   "--output", "o"]) == 0
  assert cli.main(["mine", "--metric", "l2", "--index", "IVF4,Flat",
                   "--output", "o"]) == 0


def test_tasks_shows_every_spec_form(tmp_path, capsys):
  import json  # pylint: disable=g-import-not-at-top
  from paraflax.data import specs  # pylint: disable=g-import-not-at-top
  assert cli.main(["tasks"]) == 0
  listed = capsys.readouterr().out
  for form, _ in specs.FORMS:
    assert form in listed
  records = tmp_path / "bt.jsonl"
  records.write_text("".join(json.dumps(
      {"id": i, "reference": f"a man plays {i}", "rank": 0, "cost": 0.5,
       "translation": f"a man is playing {i}", "source": "x"}) + "\n"
                             for i in range(2)), encoding="utf-8")
  assert cli.main(["tasks", "--data", f"backtranslated:{records}"]) == 0
  assert "a man plays 1 ||| a man is playing 1" in capsys.readouterr().out
