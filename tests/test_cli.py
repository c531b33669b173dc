"""The command line: fast help, clear errors, no partial outputs."""
import json
import pathlib
import shutil

import numpy as np
import pytest

from paraflax import cli
from paraflax.data import paths

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
  from tests.conftest import TINY  # pylint: disable=g-import-not-at-top
  path = tmp_path_factory.mktemp("tiny") / "w"
  assert cli.main(["train", "--config", str(ROOT / "configs" / "gran.py"),
                   "--workdir", str(path), *TINY]) == 0
  return path


def test_help_answers_without_jax_or_tensorflow(run_python):
  out = run_python(
      "import sys\nfrom paraflax import cli\n"
      "for argv in (['--help'], ['train', '--help'], ['embed', '--help']):\n"
      "  try: cli.main(argv)\n  except SystemExit: pass\n"
      "heavy = {'jax', 'tensorflow', 'seqio', 'flax'} & set(sys.modules)\n"
      "assert not heavy, heavy\n")
  assert "--config" in out and "LASER" in out


def test_unknown_config_key_names_it_and_suggests(tmp_path, capsys):
  target = tmp_path / "w"
  code = cli.main(["train", "--config", str(ROOT / "configs" / "gran.py"),
                   "--workdir", str(target), "--config.model.hiden=3"])
  err = capsys.readouterr().err
  assert code == cli.EXIT_BAD_INPUT
  assert "unknown config key 'model.hiden'" in err
  assert "Did you mean 'hidden'" in err
  assert not target.exists()


def test_tasks_lists_the_catalogue(capsys):
  assert cli.main(["tasks"]) == 0
  out = capsys.readouterr().out
  assert "paraphrase_en_human" in out and "bitext_multi30k_de_en" in out


def test_unknown_task_is_a_config_error(tmp_path, capsys):
  code = cli.main(["train", "--config", str(ROOT / "configs" / "avg.py"),
                   "--workdir", str(tmp_path / "w"),
                   "--config.data.task=paraphrase_en_nothing"])
  assert code == cli.EXIT_BAD_INPUT
  assert "paraflax tasks" in capsys.readouterr().err


def test_bad_config_value_is_named(tmp_path, capsys):
  code = cli.main(["train", "--config", str(ROOT / "configs" / "avg.py"),
                   "--workdir", str(tmp_path / "w"),
                   "--config.batch_size=many"])
  assert code == cli.EXIT_BAD_INPUT
  assert "batch_size" in capsys.readouterr().err


def test_ragged_parallel_data_stops_training(tmp_path, monkeypatch, capsys):
  root = tmp_path / "data"
  src = paths.data_path("generaltest2022")
  (root / "generaltest2022").mkdir(parents=True)
  for name in ("generaltest2022.cs-en.ref.B.en",
               "generaltest2022.cs-en.ref.C.en"):
    lines = (src / name).read_text(encoding="utf-8").splitlines(True)
    if name.endswith("C.en"):
      lines = lines[:-3]
    (root / "generaltest2022" / name).write_text("".join(lines), "utf-8")
  shutil.copytree(paths.data_path("sts"), root / "sts")
  monkeypatch.setenv(paths.ENV_VAR, str(root))
  from tests.conftest import TINY  # pylint: disable=g-import-not-at-top
  code = cli.main(["train", "--config", str(ROOT / "configs" / "gran.py"),
                   "--workdir", str(tmp_path / "w"), *TINY])
  err = capsys.readouterr().err
  assert code == cli.EXIT_BAD_INPUT
  assert "ref.B.en has 1448 lines" in err and "ref.C.en has 1445" in err
  assert not (tmp_path / "w" / "checkpoints").exists()


def _embed(workdir, tmp_path, content: bytes, output: str = "out.f32"):
  source, target = tmp_path / "in.txt", tmp_path / output
  source.write_bytes(content)
  return cli.main(["embed", "--workdir", str(workdir), "--input", str(source),
                   "--output", str(target)]), target


def test_embed_keeps_row_order_and_shape(workdir, tmp_path):
  code, target = _embed(workdir, tmp_path, b"a dog runs .\nthe sky is blue\n")
  assert code == 0
  first = np.fromfile(target, "<f4").reshape(2, -1)
  code, target = _embed(workdir, tmp_path, b"the sky is blue\na dog runs .\n",
                        "swapped.f32")
  swapped = np.fromfile(target, "<f4").reshape(2, -1)
  np.testing.assert_array_equal(first[::-1], swapped)
  assert first.shape == (2, 32)


def test_loading_an_encoder_builds_no_optimizer(workdir, forbid):
  """Embedding needs the model and its parameters, restored alone: no
  training recipe, no optimizer is built."""
  from paraflax.inference import embedders  # pylint: disable=g-import-not-at-top
  from paraflax.recipes import paraphrase  # pylint: disable=g-import-not-at-top
  from paraflax.training import optimizers  # pylint: disable=g-import-not-at-top
  forbid("an optimizer was built to embed", (optimizers, "make"),
         (paraphrase, "ParaphraseRecipe"))
  embed, step = embedders.load(str(workdir), ["en"])
  x = embed(["a dog runs .", "the sky is blue"], "en")
  assert step > 0 and x.shape == (2, 32) and np.all(np.isfinite(x))


def test_the_api_embeds_as_the_command(workdir, tmp_path):
  import paraflax  # pylint: disable=g-import-not-at-top
  code, target = _embed(workdir, tmp_path, b"a dog runs .\nthe sky is blue\n")
  assert code == 0
  model = paraflax.load(workdir)
  assert model.recipe == "paraphrase" and model.languages == ("en",)
  np.testing.assert_array_equal(
      model.embed(["a dog runs .", "the sky is blue"]),
      np.fromfile(target, "<f4").reshape(2, -1))
  with pytest.raises(paraflax.ConfigError, match="cannot embed 'de'"):
    model.embed(["ein Hund"], lang="de")
  with pytest.raises(paraflax.ConfigError, match="'bilingual'"):
    model.score_pairs(["a"], ["b"])


def test_embed_keeps_an_output_it_did_not_write(workdir, tmp_path, capsys,
                                                caplog):
  text = b"a dog runs .\nthe sky is blue\n"
  assert _embed(workdir, tmp_path, text)[0] == 0
  # A byte-order mark and CRLF endings are removed, with a word: the same
  # embeddings, so the output is already there.
  code, target = _embed(workdir, tmp_path, b"\xef\xbb\xbf"
                        + text.replace(b"\n", b"\r\n"))
  assert code == 0
  assert "in.txt: removed the UTF-8 byte-order mark" in caplog.text
  assert "in.txt: 2 line(s) end with CRLF" in caplog.text
  written = target.read_bytes()
  assert _embed(workdir, tmp_path, b"the sky is blue\n")[0] == \
      cli.EXIT_BAD_INPUT
  assert (f"{target} holds the output of another run (differs in text); "
          "this run would change it") in capsys.readouterr().err
  assert target.read_bytes() == written


@pytest.mark.parametrize("content, message", [
    (b"", "empty file"),
    (b"fine\n\nalso fine\n", "line 2"),
    (b"fine\ncaf\xe9\n", ":2: invalid UTF-8"),
])
def test_embed_bad_input_leaves_no_output(workdir, tmp_path, capsys, content,
                                          message):
  code, target = _embed(workdir, tmp_path, content)
  assert code == cli.EXIT_BAD_INPUT
  assert message in capsys.readouterr().err
  assert not target.exists()
  assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_embed_without_checkpoint_is_a_clear_error(tmp_path, capsys):
  code, target = _embed(tmp_path / "nothing", tmp_path, b"hello\n")
  assert code == cli.EXIT_BAD_INPUT
  assert "paraflax train" in capsys.readouterr().err
  assert not target.exists()


def test_eval_sts_prints_and_writes_the_table(workdir, capsys):
  assert cli.main(["eval-sts", "--workdir", str(workdir)]) == 0
  out = capsys.readouterr().out
  assert "STS12-15 weighted" in out and "SICK.trial" in out
  result = json.loads((workdir / "sts.json").read_text())
  assert result["datasets"]["STS15.answers-forums"]["n"] == 375
  assert result["missing"] == ["STS12.MSRvid", "STS13.SMT"]
  assert -1 <= result["semeval_2012_2015"]["weighted_pearson"] <= 1


@pytest.mark.parametrize("override, message", [
    ("--config.train_steps=-40", "train_steps=-40 must be an integer >= 1"),
    ("--config.checkpoint.keep=0", "checkpoint.keep=0 must be an integer >= 1"),
    ("--config.eval_every=-8", "eval_every=-8 must be an integer >= 0"),
])
def test_loop_counts_out_of_range_stop_before_any_work(tmp_path, capsys,
                                                       override, message):
  code = cli.main(["train", "--config", str(ROOT / "configs" / "avg.py"),
                   "--workdir", str(tmp_path / "w"), override])
  assert code == cli.EXIT_BAD_INPUT
  assert message in capsys.readouterr().err
  assert not (tmp_path / "w").exists()


def test_resume_past_train_steps_is_refused(workdir, tmp_path, capsys):
  from tests.conftest import TINY  # pylint: disable=g-import-not-at-top
  copy = tmp_path / "w"
  shutil.copytree(workdir, copy)
  code = cli.main(["train", "--config", str(ROOT / "configs" / "gran.py"),
                   "--workdir", str(copy), *TINY, "--config.train_steps=24"])
  assert code == cli.EXIT_BAD_INPUT
  assert f"{copy} is trained to step 48, past train_steps=24" in \
      capsys.readouterr().err


def test_resume_with_another_config_is_refused(workdir, capsys):
  code = cli.main(["train", "--config", str(ROOT / "configs" / "avg.py"),
                   "--workdir", str(workdir)])
  assert code == cli.EXIT_BAD_INPUT
  assert "different config" in capsys.readouterr().err


def _logged(workdir, step: int, key: str) -> float:
  rows = [json.loads(l) for l in (workdir / "metrics.jsonl").read_text(
      ).splitlines()]
  return next(r[key] for r in rows if r["step"] == step and key in r)


def test_eval_reruns_the_evaluators_of_the_config(workdir, capsys):
  assert cli.main(["eval", "--workdir", str(workdir), "--only", "sts"]) == 0
  assert "== sts (checkpoint step" in capsys.readouterr().out
  saved = json.loads((workdir / "evals.json").read_text())
  pearson = saved["sts"]["datasets"]["STSb.dev-tuning"]["pearson"]
  # The same number the train loop logged for the checkpoint it kept.
  assert pearson == pytest.approx(_logged(
      workdir, saved["checkpoint_step"], "sts/STSb.dev-tuning/pearson"),
      abs=1e-6)
