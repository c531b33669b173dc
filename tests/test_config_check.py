"""The one check of a training config (recipes/config_check.py): run once
per command, before anything is written; what runs after it trusts it."""
import pathlib

import pytest

from paraflax import config as config_lib
from paraflax import errors
from paraflax import pipeline
from paraflax.recipes import config_check
from paraflax.recipes import settings
from paraflax.recipes import train

ROOT = pathlib.Path(__file__).resolve().parents[1]
GRAN = str(ROOT / "configs" / "gran.py")


def _counted(monkeypatch) -> dict[str, int]:
  """How often the check and its ranges run."""
  calls = {"check": 0, "ranges": 0}
  real_check, real_ranges = config_check.check, settings.check

  def check(*args, **kwargs):
    calls["check"] += 1
    return real_check(*args, **kwargs)

  def ranges(config):
    calls["ranges"] += 1
    return real_ranges(config)
  monkeypatch.setattr(config_check, "check", check)
  monkeypatch.setattr(settings, "check", ranges)
  return calls


def test_a_train_checks_its_config_once(tmp_path, tiny_overrides,
                                        monkeypatch):
  calls = _counted(monkeypatch)
  train.train(GRAN, str(tmp_path / "w"), tiny_overrides + [
      "--config.train_steps=8", "--config.eval_every=0"])
  assert calls == {"check": 1, "ranges": 1}


def test_a_bad_config_stops_before_the_workdir_is_touched(tmp_path,
                                                          tiny_overrides):
  with pytest.raises(errors.ConfigError, match="log_every must be multiples "
                     "of 4"):
    train.train(GRAN, str(tmp_path / "w"),
                tiny_overrides + ["--config.log_every=6"])
  assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("override, message", [
    ("--config.gran.settings.log_every=7",
     r"gran\.settings: log_every must be multiples of 4"),
    ("--config.bilingual.settings.train_steps=0",
     r"bilingual\.settings: .*train_steps=0"),
])
def test_the_pipeline_checks_every_trained_stage_before_the_first(
    tmp_path, override, message):
  """A setting of a late stage out of range stops the pipeline before its
  first stage trains, not hours later."""
  config = config_lib.load(str(ROOT / "configs" / "pipeline.py") + ":tiny",
                           [override])
  workdir = tmp_path / "w"
  with pytest.raises(errors.ConfigError, match=message):
    pipeline.run(config, str(workdir))
  assert not workdir.exists()


def test_a_config_of_another_run_in_the_workdir_is_refused_by_the_check(
    tmp_path, tiny_overrides):
  workdir = str(tmp_path / "w")
  overrides = tiny_overrides + ["--config.train_steps=8",
                                "--config.eval_every=0"]
  train.train(GRAN, workdir, overrides)
  other = config_lib.load(GRAN, overrides + ["--config.model.hidden=16"])
  with pytest.raises(errors.ConfigError, match="holds a run of a different "
                     "config"):
    config_check.check(other, workdir)
