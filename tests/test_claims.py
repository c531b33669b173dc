"""Every writer claims its output, and no split leaks into another: the
catalogue's classes, each on tiny synthetic data and by calling the
functions the commands call."""
import json
import os
import shutil
import subprocess
import sys

import ml_collections
import numpy as np
import pytest

from paraflax import cli
from paraflax import config as config_lib
from paraflax import errors
from paraflax import files
from paraflax import pipeline
from paraflax.data import specs
from paraflax.errors import ConfigError
from paraflax.evaluation import mining as mining_eval
from paraflax.evaluation import mining_set
from paraflax.inference import eval_filtering
from paraflax.mining import embeddings_io
from paraflax.mining import index_build
from tests.conftest import ROOT, TINY
from tests.test_bad_inputs_io import _records, lock_holder  # pylint: disable=unused-import

GRAN = str(ROOT / "configs" / "gran.py")
PIPELINE = str(ROOT / "configs" / "pipeline.py")


# --- Every writer claims its output --------------------------------------------


def test_a_refusal_names_only_the_keys_that_differ(tmp_path):
  output = str(tmp_path / "w")
  first = {"vocab": {"size": 2000, "coverage": 1.0}, "data": {"a": 1, "b": 2},
           "mining": {"dev": "x"}}
  files.claim_output(output, first, overwrite=False)
  (tmp_path / "w").write_text("started\n")
  # The same settings in another key order are the same settings.
  files.claim_output(output, {"mining": {"dev": "x"},
                              "data": {"b": 2, "a": 1},
                              "vocab": {"coverage": 1.0, "size": 2000}},
                     overwrite=False)
  other = json.loads(json.dumps(first))
  other["vocab"]["size"] = 4000
  with pytest.raises(ConfigError) as e:
    files.claim_output(output, other, overwrite=False)
  assert "(differs in vocab.size 2000 -> 4000)" in str(e.value)


def test_the_pipeline_names_the_one_key_that_differs(tmp_path):
  from paraflax.pipeline import planning  # pylint: disable=g-import-not-at-top
  workdir = str(tmp_path / "w")
  pipeline._claim(planning.plan(config_lib.load(f"{PIPELINE}:tiny"),
                                workdir), overwrite=False)
  (tmp_path / "w" / "nmt").mkdir()
  (tmp_path / "w" / "nmt" / "metrics.jsonl").write_text("{}\n")
  files.release_output_locks()
  other = config_lib.load(f"{PIPELINE}:tiny",
                          ["--config.nmt.settings.vocab.size=4000"])
  with pytest.raises(ConfigError, match=r"\(differs in nmt.settings.vocab.size"
                     r" 2000 -> 4000\)"):
    pipeline._claim(planning.plan(other, workdir), overwrite=False)


def test_a_second_train_on_a_workdir_stops_naming_the_first(
    tmp_path, capsys, lock_holder):
  workdir = tmp_path / "w"
  lock_holder(workdir)
  assert cli.main(["train", "--config", GRAN, "--workdir", str(workdir),
                   *TINY]) == cli.EXIT_BAD_INPUT
  err = capsys.readouterr().err
  assert f"{workdir}: another run (process " in err
  assert not (workdir / "metrics.jsonl").exists()


def test_a_released_output_is_free_for_the_next_run(tmp_path):
  output = str(tmp_path / "w")
  files.lock_output(output)
  files.release_output(output)
  files.release_output(output)  # not held: nothing to do
  assert not os.path.exists(output + ".lock")
  proc = subprocess.run(
      [sys.executable, "-c", "from paraflax import files; "
       f"files.lock_output({output!r})"], cwd=ROOT, check=False)
  assert proc.returncode == 0


def test_a_one_shot_output_is_locked_while_it_is_built(tmp_path,
                                                       lock_holder):
  output = tmp_path / "set"
  lock_holder(output)
  with pytest.raises(ConfigError, match="another run .process "):
    mining_set.build_folder(str(output), lang="de", split="dev", gold=5,
                            distractors=5)
  assert not output.exists()


class _NoModel(Exception):
  pass


def test_a_rerun_on_other_inputs_is_refused_not_reported(tmp_path,
                                                          monkeypatch):
  """`eval-filtering` resumes its table only for the inputs and settings
  it was made with; its output records them before any work."""
  from paraflax.inference import scoring  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(scoring, "workdir_languages", lambda w: ("de", "en"))

  def no_model(*args):
    raise _NoModel()
  monkeypatch.setattr(scoring, "open_workdir", no_model)
  output = str(tmp_path / "eval")
  noisy = {}
  for name, text in (("a", "ein hund\ta dog\n"), ("b", "eine katze\ta cat\n")):
    noisy[name] = tmp_path / f"{name}.tsv"
    noisy[name].write_text(text * 3)

  def run(name: str, **kwargs) -> None:
    eval_filtering.eval_filtering(str(tmp_path / "bilingual"),
                                  str(noisy[name]), output, [10], **kwargs)

  # A start that fails before any result does not block another one.
  for name in ("a", "b"):
    with pytest.raises(_NoModel):
      run(name)
  os.makedirs(output, exist_ok=True)
  with open(os.path.join(output, eval_filtering.REPORT), "w") as f:
    f.write('{"rows": []}\n')  # b's table, as a finished run leaves it
  files.release_output_locks()
  with pytest.raises(ConfigError, match=r"differs in noisy\)"):
    run("a")
  with pytest.raises(_NoModel):
    run("a", overwrite=True)
  assert not os.path.exists(os.path.join(output, eval_filtering.REPORT))


def test_an_input_still_being_written_is_refused(tmp_path, capsys,
                                                 lock_holder):
  source = tmp_path / "bt.jsonl"
  source.write_text(_records(3))
  lock_holder(source)
  assert files.writer_of(str(source)) is not None
  assert cli.main(["score-paraphrases", "--input", str(source), "--output",
                   str(tmp_path / "scored.jsonl")]) == cli.EXIT_BAD_INPUT
  err = capsys.readouterr().err
  assert f"--input {source}: another run (process " in err
  assert "still writing it" in err
  assert not (tmp_path / "scored.jsonl").exists()


def test_a_config_naming_an_output_still_being_written_is_refused(
    tmp_path, lock_holder):
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  scored = tmp_path / "scored.jsonl"
  scored.write_text(_records(3))
  lock_holder(scored)
  with pytest.raises(ConfigError, match="data.task .*still writing it"):
    tasks.register_backtranslated(str(scored))


def test_a_writer_reads_what_it_wrote_itself(tmp_path):
  output = str(tmp_path / "out.jsonl")
  files.lock_output(output)
  assert files.writer_of(output) is None  # this process's own output
  files.release_output_locks()
  assert files.writer_of(output) is None and not os.path.exists(
      output + ".lock")


def test_a_failed_index_build_does_not_block_its_corrected_rerun(tmp_path):
  emb = tmp_path / "x.f32"
  embeddings_io.write(str(emb), np.random.default_rng(0).normal(
      size=(60, 8)).astype(np.float32))
  folder = tmp_path / "index"
  # What a build that failed in faiss's training leaves: its settings.
  files.claim_output(str(folder / index_build.INDEX_FILE),
                     {"factory": "IVF1000,Flat"}, overwrite=False)
  files.release_output_locks()
  assert cli.main(["index", "--emb", str(emb), "--index", "IVF2,Flat",
                   "--output", str(folder)]) == 0
  assert (folder / index_build.INDEX_FILE).exists()


def test_claim_files_alone_hold_no_work(tmp_path):
  folder = tmp_path / "out.parts"
  (folder / "index-src").mkdir(parents=True)
  (folder / "index-src" / "index.faiss.meta.json").write_text("{}\n")
  (folder / "index-src" / "index.faiss.lock").write_text("123\n")
  assert not files.holds_work(str(folder))
  (folder / "fwd-000000.npz").write_bytes(b"x")
  assert files.holds_work(str(folder))


# --- No leak between splits ----------------------------------------------------


def test_one_column_or_file_on_both_sides_is_refused(tmp_path):
  tsv, text = tmp_path / "pairs.tsv", tmp_path / "x.de"
  tsv.write_text("ein hund\ta dog\n")
  text.write_text("ein hund\n")
  (tmp_path / "link.de").symlink_to(text)
  with pytest.raises(ConfigError, match="column 0 named for two features"):
    specs.parse(f"tsv:{tsv}:0,0")
  for other in (text, tmp_path / "link.de"):
    with pytest.raises(ConfigError, match="is on both sides"):
      specs.parse(f"lines:{text},{other}")


def test_lines_globs_pair_files_by_name(tmp_path):
  for name in ("n2020.de", "n2020.en", "n2021.de", "n2021.en"):
    (tmp_path / name).write_text(name + "\n")
  data = specs.parse(f"lines:{tmp_path}/*.de,{tmp_path}/*.en")
  assert [[os.path.basename(f) for f in part.files]
          for part in data.corpus.splits["train"].parts] == [
              ["n2020.de", "n2020.en"], ["n2021.de", "n2021.en"]]
  os.rename(tmp_path / "n2021.en", tmp_path / "n2022.en")
  with pytest.raises(errors.DataError,
                     match=r"n2021.de \(of .*\*.de\) has no file of the same"):
    specs.parse(f"lines:{tmp_path}/*.de,{tmp_path}/*.en")


def test_lines_globs_pair_names_that_differ_by_their_language(tmp_path):
  for lang in ("fi", "en"):
    (tmp_path / lang).mkdir()
    for part in (1, 2, 10):
      (tmp_path / lang / f"part-{part}.{lang}.txt").write_text(f"{part}\n")
  data = specs.parse(f"lines:{tmp_path}/fi/*,{tmp_path}/en/*")
  assert [[os.path.basename(f) for f in part.files]
          for part in data.corpus.splits["train"].parts] == [
              [f"part-{n}.fi.txt", f"part-{n}.en.txt"] for n in (1, 10, 2)]


def test_a_tsv_given_as_a_lines_side_is_refused(tmp_path):
  (tmp_path / "x.de").write_text("ein hund\ta dog\n")
  (tmp_path / "x.en").write_text("a dog\n")
  with pytest.raises(errors.DataError, match=r"x.de:1 holds a tab.*tsv:"):
    specs.parse(f"lines:{tmp_path}/x.de,{tmp_path}/x.en")


def test_a_set_the_training_split_holds_out_is_kept_apart_from_it():
  """The newstest pool holds out newstest2012 and 2013 (drops their rows):
  either is a test set of a model trained on it; the pool's own files are
  not."""
  fix = "Give a test set kept out of the training data."
  specs.refuse_shared_files(
      [("data.train", "bitext_newstest_pool_de_en"),
       ("--data", "bitext_newstest_dev_de_en:newstest2013")], fix)
  with pytest.raises(errors.ConfigError, match=r"--data=bitext_newstest_dev_"
                     r"de_en:newstest2013 and data.train=.* both read .*"
                     r"newstest2013.deu.*" + fix):
    specs.refuse_shared_files(
        [("data.train", "bitext_newstest_dev_de_en:newstest2013"),
         ("--data", "bitext_newstest_dev_de_en:newstest2013")], fix)


@pytest.mark.parametrize("keys, message", [
    (("data.train", "data.dev"), "data.dev=.* and data.train=.* both read"),
    (("data.train", "mining.test"),
     "mining.test=.* and data.train=.* both read"),
    (("mining.dev", "mining.test"),
     "mining.test=.* and mining.dev=.* both read"),
    (("data.dev", "mining.test"),
     "mining.test=.* and data.dev=.* both read.* picks the encoders' "
     "checkpoint"),
])
def test_the_pipeline_keeps_splits_apart_before_claiming(keys, message,
                                                         tmp_path):
  spec = {}
  for key in ("data.train", "data.dev", "mining.dev", "mining.test"):
    spec[key] = tmp_path / f"{key}.tsv"
    spec[key].write_text("".join(f"hund {i}\tdog {i}\n" for i in range(9)))
  spec[keys[1]] = spec[keys[0]]
  config = config_lib.load(f"{PIPELINE}:tiny", [
      "--config.mining.gold=3", "--config.mining.distractors=3",
      f"--config.data.train=tsv:{spec['data.train']}",
      *(f"--config.{key}=tsv:{spec[key]}"
        for key in ("data.dev", "mining.dev", "mining.test"))])
  workdir = tmp_path / "w"
  with pytest.raises(ConfigError, match=message):
    pipeline.run(config, str(workdir))
  assert not workdir.exists()


@pytest.mark.parametrize("key, fix", [
    ("data.dev", r"Remove them from the training files, or name another "
     r"dev set: --config\.data\.dev=SPEC \(--config\.nmt\.settings\.data\."
     r"allow_dev_overlap=true --config\.bilingual\.settings\.data\."
     r"allow_dev_overlap=true allows them\)\."),
    ("mining.test", r"Remove them from the training files, or build the "
     r"benchmark from bitext kept out of training: "
     r"--config\.mining\.test=SPEC"),
])
def test_the_pipeline_counts_evaluation_pairs_found_in_training(key, fix,
                                                                tmp_path):
  """Other files, the same pairs: data.train holding pairs of data.dev or
  of a mining benchmark's bitext is refused before any stage, by content
  (each side stripped), with the count, examples and the fix."""
  spec = {}
  for k in ("data.train", "data.dev", "mining.dev", "mining.test"):
    spec[k] = tmp_path / f"{k}.tsv"
    spec[k].write_text("".join(f"hund {k} {i}\tdog {k} {i}\n"
                               for i in range(30)))
  with spec["data.train"].open("a") as f:  # two of key's pairs, re-spaced
    f.write(f" hund {key} 4\tdog {key} 4 \nhund {key} 7\t dog {key} 7\n")
  args = ["--config.mining.gold=3", "--config.mining.distractors=3",
          *(f"--config.{k}=tsv:{spec[k]}" for k in spec)]
  workdir = tmp_path / "w"
  with pytest.raises(ConfigError, match=(
      rf"{key}=tsv:.*{key}\.tsv: 2 of its 30 pairs are in data\.train too "
      rf".* e\.g\. 'hund {key} 4' / 'dog {key} 4'; 'hund {key} 7' / "
      rf"'dog {key} 7'; .*{fix}")):
    pipeline.run(config_lib.load(f"{PIPELINE}:tiny", args), str(workdir))
  assert not workdir.exists()
  if key == "data.dev":  # allowed by the overrides the message names
    from paraflax.pipeline import planning  # pylint: disable=g-import-not-at-top
    planning.plan(config_lib.load(f"{PIPELINE}:tiny", args + [
        f"--config.{stage}.settings.data.allow_dev_overlap=true"
        for stage in ("nmt", "bilingual")]), str(workdir))


def test_mining_eval_refuses_the_dev_benchmark_as_test(tmp_path):
  dev = tmp_path / "dev"
  dev.mkdir()
  for name in mining_set.FILES:
    (dev / name).write_text("a\n")
  shutil.copytree(dev, tmp_path / "copy")
  for test in (dev, tmp_path / "copy"):
    with pytest.raises(ConfigError, match="hold the same benchmark"):
      mining_eval.refuse_same_benchmark(str(dev), str(test))
  (tmp_path / "copy" / "gold.tsv").write_text("b\n")
  mining_eval.refuse_same_benchmark(str(dev), str(tmp_path / "copy"))


def test_an_evaluator_refuses_a_test_set_of_the_training_data(tmp_path):
  from paraflax.inference import scoring  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import workdir as workdir_lib  # pylint: disable=g-import-not-at-top
  train, test = tmp_path / "train.tsv", tmp_path / "test.tsv"
  for path in (train, test):
    path.write_text("ein hund\ta dog\n")
  workdir = tmp_path / "w"
  dev = tmp_path / "dev.tsv"
  dev.write_text("eine katze\ta cat\n")
  workdir_lib.save_config(str(workdir), ml_collections.ConfigDict(
      {"recipe": "bilingual", "data": {"train": (f"tsv:{train}",),
                                       "dev": f"tsv:{dev}"}}))
  with pytest.raises(ConfigError, match=r"--data=tsv:.*train.tsv and "
                     r"data.train of .*w=tsv:.* both read"):
    scoring.refuse_seen_data(str(workdir), [("--data", f"tsv:{train}")])
  with pytest.raises(ConfigError, match=r"--data=tsv:.*dev.tsv and "
                     r"data.dev of .*w=tsv:.* both read.*picked the "
                     r"workdir's checkpoint"):
    scoring.refuse_seen_data(str(workdir), [("--data", f"tsv:{dev}")])
  scoring.refuse_seen_data(str(workdir), [("--data", f"tsv:{test}")])


def test_the_alignment_tests_leave_out_the_dev_set_that_picked_the_checkpoint():
  from paraflax.evaluation import alignment  # pylint: disable=g-import-not-at-top
  from paraflax.evaluation import evaluators  # pylint: disable=g-import-not-at-top
  dev = "bitext_newstest_dev_de_en:newstest2012"
  bundled = alignment.available_sets("de")
  assert "newstest2012" in bundled
  kept, left_out = alignment.test_sets("de", dev)
  assert left_out == ["newstest2012"]
  assert kept == [name for name in bundled if name != "newstest2012"]
  # The default dev, newstest2013, is none of the bundled test sets.
  assert alignment.test_sets(
      "de", "bitext_newstest_dev_de_en:newstest2013") == (bundled, [])
  with pytest.raises(ConfigError, match=r"test set=bitext_newstest_dev_de_en"
                     r":newstest2012 and data.dev=.* both read .*newstest2012"
                     r".*picks the checkpoint"):
    alignment.test_sets("de", dev, ["multi30k_test_2016_flickr",
                                    "newstest2012"])
  # The evaluator is given the config's data.dev, as it is given its dev
  # pairs.
  checked = evaluators.settings_of(
      {"tests": {"type": "alignment_recovery", "lang": "de"}}, dev)
  assert checked["tests"][1]["dev"] == dev


# --- Embeddings read one way ---------------------------------------------------


def test_an_embedding_file_replaced_under_its_sidecar_is_refused(tmp_path):
  path = str(tmp_path / "x.f32")
  matrix = np.arange(32, dtype=np.float32).reshape(8, 4)
  embeddings_io.write(path, matrix)
  np.testing.assert_array_equal(embeddings_io.read(path, None), matrix)
  # The same size, another matrix (4 x 8 read as 8 x 4 would pass the size
  # check): the sidecar's digest of its ends tells them apart.
  (tmp_path / "x.f32").write_bytes(matrix.T.copy().tobytes())
  with pytest.raises(errors.DataError, match="not the matrix .*x.f32.info"):
    embeddings_io.read(path, None)


def test_exact_and_indexed_mining_treat_zero_rows_alike(tmp_path, capsys):
  """A zero row (an empty sentence) has cosine 0 with every row: both
  searches take the first rows as its neighbours, so they mine the same
  pairs (margin distance) or refuse the same rows (margin ratio)."""
  rng = np.random.default_rng(0)
  x = rng.normal(size=(200, 8)).astype(np.float32)
  y = x + 0.1 * rng.normal(size=(200, 8)).astype(np.float32)
  x[:3], y[5:7] = 0, 0
  for name, matrix in (("x", x), ("y", y)):
    embeddings_io.write(str(tmp_path / f"{name}.f32"), matrix)

  def mine(*extra: str) -> tuple[int, str]:
    out = tmp_path / f"out{len(list(tmp_path.iterdir()))}.tsv"
    code = cli.main(["mine", "--src-emb", str(tmp_path / "x.f32"),
                     "--tgt-emb", str(tmp_path / "y.f32"), "--output",
                     str(out), *extra])
    err = capsys.readouterr().err
    if code:
      return code, err.split("error: ")[-1]
    return code, sorted(tuple(l.split("\t")[1:]) for l in
                        out.read_text().splitlines())

  index = ("--index", "IVF2,Flat", "--nprobe", "2")
  distance = ("--margin", "distance")
  assert mine(*distance) == mine(*distance, *index)
  exact, indexed = mine(), mine(*index)
  assert exact == indexed and "undefined for y row(s) [5, 6]" in exact[1]
