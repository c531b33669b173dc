"""Atomic writes and the one policy for an existing output."""
import json
import os
import signal
import subprocess
import sys

import pytest

from paraflax import errors
from paraflax import faults
from paraflax import files
from paraflax.errors import ConfigError

SETTINGS = {"beam": 2, "model": "f" * 64}


def test_a_new_output_records_its_settings(tmp_path):
  output = str(tmp_path / "out.jsonl")
  files.claim_output(output, SETTINGS, overwrite=False)
  with open(files.settings_path(output), encoding="utf-8") as f:
    assert json.load(f) == SETTINGS


def test_the_same_settings_resume_and_keep_the_work(tmp_path):
  output = tmp_path / "out.jsonl"
  files.claim_output(str(output), SETTINGS, overwrite=False)
  output.write_text("finished\n")
  files.claim_output(str(output), dict(SETTINGS), overwrite=False)
  assert output.read_text() == "finished\n"


def test_other_settings_are_refused_and_the_work_kept(tmp_path):
  output = tmp_path / "out.jsonl"
  parts = tmp_path / "out.jsonl.parts"
  files.claim_output(str(output), SETTINGS, overwrite=False)
  parts.mkdir()
  (parts / "part-0").write_text("a finished part\n")
  other = dict(SETTINGS, beam=3, model="e" * 64)
  with pytest.raises(ConfigError) as e:
    files.claim_output(str(output), other, overwrite=False,
                       leftovers=[str(parts)])
  assert str(e.value).startswith(f"{output} holds the output of another run "
                                 "(differs in beam 2 -> 3, model);")
  assert "--overwrite" in str(e.value) and parts.is_dir()
  files.claim_output(str(output), other, overwrite=True,
                     leftovers=[str(parts)])
  assert not parts.exists()
  assert json.loads(open(files.settings_path(str(output))).read()) == other


def test_an_output_without_settings_is_refused_unless_overwritten(tmp_path):
  output = tmp_path / "old.jsonl"
  output.write_text("made by someone else\n")
  with pytest.raises(ConfigError, match="it has no .*old.jsonl.meta.json"):
    files.claim_output(str(output), SETTINGS, overwrite=False)
  assert output.read_text() == "made by someone else\n"
  files.claim_output(str(output), SETTINGS, overwrite=True)
  assert not output.exists()


def test_nothing_finished_means_nothing_to_refuse(tmp_path):
  """A run killed before its first record leaves only the settings."""
  output = tmp_path / "out.jsonl"
  files.claim_output(str(output), SETTINGS, overwrite=False)
  output.touch()
  files.claim_output(str(output), dict(SETTINGS, beam=5), overwrite=False)
  assert json.loads(open(files.settings_path(str(output))).read())[
      "beam"] == 5


@pytest.mark.parametrize("moment, left", [
    ("atomic.written:2", ["a.txt"]),  # b.txt's temp file, not b.txt
    ("atomic.renamed:2", ["a.txt", "b.txt"]),
])
def test_a_moment_kills_the_process_the_nth_time(tmp_path, moment, left):
  code = ("from paraflax import files\n"
          "for name in ('a.txt', 'b.txt', 'c.txt'):\n"
          f"  files.write_text_atomic({str(tmp_path)!r} + '/' + name, name)\n")
  done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                        env=dict(os.environ, **{faults.ENV: moment}),
                        check=False)
  assert done.returncode == -signal.SIGKILL
  assert sorted(p.name for p in tmp_path.iterdir()
                if not p.name.startswith(".tmp-")) == left
  assert subprocess.run([sys.executable, "-c", code], check=False,
                        env={k: v for k, v in os.environ.items()
                             if k != faults.ENV}).returncode == 0


def test_write_all_once_refuses_before_writing_any(tmp_path):
  a, b = tmp_path / "a.json", tmp_path / "a.md"
  assert files.write_all_once({a: "1\n", b: "one\n"}, overwrite=False)
  assert not files.write_all_once({a: "1\n", b: "one\n"}, overwrite=False)
  a.unlink()
  with pytest.raises(errors.ConfigError, match="a.md exists"):
    files.write_all_once({a: "2\n", b: "two\n"}, overwrite=False)
  assert not a.exists()  # not half of the new result
  assert files.write_all_once({a: "2\n", b: "two\n"}, overwrite=True)
  assert (a.read_text(), b.read_text()) == ("2\n", "two\n")


def test_write_once_keeps_what_is_there(tmp_path):
  path = tmp_path / "out.txt"
  assert files.write_once(path, "a\n", overwrite=False)
  assert not files.write_once(path, "a\n", overwrite=False)  # a rerun
  with pytest.raises(ConfigError, match=r"out\.txt exists and holds another "
                     r"result; .*--overwrite"):
    files.write_once(path, "b\n", overwrite=False)
  assert path.read_text() == "a\n"
  assert files.write_once(path, "b\n", overwrite=True)
  assert path.read_text() == "b\n"


def test_check_output_refuses_folders_and_unwritable_places(tmp_path):
  files.check_output(tmp_path / "new" / "deeper" / "out.tsv")
  with pytest.raises(errors.DataError, match="is a directory"):
    files.check_output(tmp_path)
  (tmp_path / "file").write_text("x")
  with pytest.raises(ConfigError, match=r"file is not a writable folder"):
    files.check_output(tmp_path / "file" / "out.tsv")
