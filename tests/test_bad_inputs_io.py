"""Inputs and outputs that must never lose data: an output that is an input
is refused whatever the flags; two runs on one output never both write it;
records, text and embedding files are checked before any work, each with
one message (exit 2) naming the file, the line and the fix."""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from paraflax import cli
from paraflax import files
from paraflax.mining import embeddings_io

ROOT = pathlib.Path(__file__).resolve().parents[1]
_BT = {"id": 0, "reference": "a man plays", "translation": "a man is playing",
       "rank": 0, "cost": 0.5, "source": "x"}


def _fake_workdir(tmp: pathlib.Path, recipe: str) -> str:
  (tmp / "w").mkdir(exist_ok=True)
  (tmp / "w" / "config.json").write_text(json.dumps({"recipe": recipe}))
  return str(tmp / "w")


def _records(count: int) -> str:
  return "".join(json.dumps({**_BT, "id": i, "reference": f"a man plays {i}"})
                 + "\n" for i in range(count))


def _fails(argv: list[str], capsys, message: str) -> str:
  assert cli.main(argv) == cli.EXIT_BAD_INPUT
  err = capsys.readouterr().err
  assert "Traceback" not in err
  assert err.startswith(f"paraflax {argv[0]}: error: "), err
  assert message in err, err
  return err


# --- an output that is an input ---------------------------------------------

# argv of each command that reads IN and writes OUT (both under tmp).
_READ_WRITE = {
    "embed": lambda t: ["embed", "--workdir", _fake_workdir(t, "paraphrase"),
                        "--input", "IN", "--output", "OUT"],
    "translate": lambda t: ["translate", "--workdir", _fake_workdir(t, "nmt"),
                            "--input", "IN", "--output", "OUT"],
    "backtranslate": lambda t: [
        "backtranslate", "--workdir", _fake_workdir(t, "nmt"), "--src", "IN",
        "--ref", "IN", "--output", "OUT"],
    "score-paraphrases": lambda t: ["score-paraphrases", "--input", "IN",
                                    "--output", "OUT"],
    "beam-score": lambda t: ["beam-score", "--input", "IN", "--output",
                             "OUT"],
    "mine": lambda t: ["mine", "--src-emb", "IN", "--tgt-emb", "IN", "--dim",
                       "4", "--output", "OUT"],
    "pair-stats --json": lambda t: ["pair-stats", "IN", "--json", "OUT"],
}


def _link(tmp: pathlib.Path, how: str) -> tuple[str, str]:
  """An input file, and the output path that names it `how`."""
  source = tmp / "in.txt"
  source.write_text(_records(3))
  if how == "same path":
    return str(source), str(source)
  if how == "relative path":
    return str(source), os.path.relpath(source)
  out = tmp / "out.txt"
  if how == "symbolic link":
    out.symlink_to(source)
  else:
    os.link(source, out)
  return str(source), str(out)


@pytest.mark.parametrize("how", ["same path", "relative path",
                                 "symbolic link", "hard link"])
@pytest.mark.parametrize("command", sorted(_READ_WRITE))
def test_an_output_that_is_an_input_is_refused_even_with_overwrite(
    command, how, tmp_path, capsys):
  source, output = _link(tmp_path, how)
  before = pathlib.Path(source).read_bytes()
  argv = [source if a == "IN" else output if a == "OUT" else a
          for a in _READ_WRITE[command](tmp_path)]
  if command != "pair-stats --json":
    argv.append("--overwrite")
  _fails(argv, capsys, "writing it would destroy the input")
  assert pathlib.Path(source).read_bytes() == before


def test_an_output_folder_that_holds_an_input_is_refused(tmp_path, capsys):
  folder = tmp_path / "corpus"
  folder.mkdir()
  for name, text in (("in.txt", "a b\n"), ("g.de", "x y\n"),
                     ("g.en", "a b\n")):
    (folder / name).write_text(text)
  _fails(["select-domain", "--in-domain", str(folder / "in.txt"),
          "--general-src", str(folder / "g.de"), "--general-tgt",
          str(folder / "g.en"), "--src-lang", "de", "--output", str(folder),
          "--overwrite"], capsys, "holds the input --in-domain")
  assert sorted(p.name for p in folder.iterdir()) == ["g.de", "g.en",
                                                      "in.txt"]


# --- one writer per output ---------------------------------------------------


@pytest.fixture
def lock_holder():
  """Locks an output from another process, as a running command does."""
  procs = []

  def hold(output: pathlib.Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; from paraflax import files; "
         f"files.lock_output({str(output)!r}); print('locked', flush=True); "
         "sys.stdin.read()"], cwd=ROOT, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "locked\n"
    procs.append(proc)
  yield hold
  for proc in procs:
    proc.communicate("", timeout=30)


def test_a_second_run_on_a_locked_output_stops_before_writing(
    tmp_path, capsys, lock_holder):
  source, output = tmp_path / "bt.jsonl", tmp_path / "scored.jsonl"
  source.write_text(_records(5))
  lock_holder(output)
  _fails(["score-paraphrases", "--input", str(source), "--output",
          str(output)], capsys, "another run (process ")
  assert not output.exists()
  assert not os.path.exists(files.settings_path(str(output)))


def test_a_lock_of_a_killed_run_does_not_block(tmp_path):
  output = tmp_path / "out"
  proc = subprocess.run(
      [sys.executable, "-c", "import os, signal; from paraflax import files; "
       f"files.lock_output({str(output)!r}); "
       "os.kill(os.getpid(), signal.SIGKILL)"], cwd=ROOT, check=False)
  assert proc.returncode == -9
  files.lock_output(str(output))  # the kernel released the killed run's
  files.release_output_locks()
  assert not (tmp_path / "out.lock").exists()


def _paraflax(*argv: str) -> subprocess.Popen:
  return subprocess.Popen([sys.executable, "-m", "paraflax.cli", *argv],
                          cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def _together(argv: list[str]) -> list[tuple[int, str]]:
  """Two identical commands started at once: their exit codes and errors."""
  procs = [_paraflax(*argv) for _ in range(2)]
  return [(p.wait(timeout=300), p.communicate()[1]) for p in procs]


def _one_wrote(results: list[tuple[int, str]]) -> None:
  for code, err in results:
    assert code == 0 or (code == cli.EXIT_BAD_INPUT
                         and "another run (process " in err), err
  assert any(code == 0 for code, _ in results)


def test_two_identical_score_runs_at_once_write_each_record_once(tmp_path):
  source, output = tmp_path / "bt.jsonl", tmp_path / "scored.jsonl"
  source.write_text(_records(3000))
  _one_wrote(_together(["score-paraphrases", "--input", str(source),
                        "--output", str(output)]))
  ids = [json.loads(line)["id"] for line in output.read_text().splitlines()]
  assert ids == list(range(3000))
  assert not (tmp_path / "scored.jsonl.lock").exists()


def test_two_identical_mine_runs_at_once_write_one_tsv(tmp_path):
  rng = np.random.default_rng(0)
  for side in ("x", "y"):
    embeddings_io.write(str(tmp_path / side), rng.normal(
        size=(400, 8)).astype(np.float32))
  argv = ["mine", "--src-emb", str(tmp_path / "x"), "--tgt-emb",
          str(tmp_path / "y"), "--k", "4", "--block", "50", "--output"]
  assert cli.main([*argv, str(tmp_path / "alone.tsv")]) == 0
  _one_wrote(_together([*argv, str(tmp_path / "out.tsv")]))
  assert (tmp_path / "out.tsv").read_bytes() == \
      (tmp_path / "alone.tsv").read_bytes()
  assert not (tmp_path / "out.tsv.parts").exists()


# --- records checked field by field ------------------------------------------


@pytest.mark.parametrize("record, message", [
    ({**_BT, "translation": 3}, "field 'translation' is 3, not a string"),
    ({**_BT, "reference": None}, "field 'reference' is null, not a string"),
    ({**_BT, "rank": "0"}, "field 'rank' is \"0\", not an integer >= 0"),
    ({**_BT, "rank": -1}, "field 'rank' is -1, not an integer >= 0"),
    ({**_BT, "cost": True}, "field 'cost' is true, not a number"),
    ('{"id": 0, "id": 1, "reference": "a", "translation": "b", "rank": 0, '
     '"cost": 1}', "key 'id' given twice"),
    ('{"id": 0, "reference": "a", "translation": "b", "rank": 0, '
     '"cost": NaN}', "NaN is not a number JSON allows"),
    ('{"id": 0, "reference": "a", "translation": "b", "rank": 0, '
     '"cost": 1e999}', "1e999 overflows to infinity"),
    (_BT, "the record of id 0, rank 0 is there already, at line 1"),
])
@pytest.mark.parametrize("command", ["score-paraphrases", "pair-stats"])
def test_a_bad_record_stops_before_any_output(command, record, message,
                                              tmp_path, capsys):
  source, output = tmp_path / "bt.jsonl", tmp_path / "out.jsonl"
  line = record if isinstance(record, str) else json.dumps(record)
  source.write_text(json.dumps(_BT) + "\n" + line + "\n")
  argv = (["score-paraphrases", "--input", str(source), "--output",
           str(output)] if command == "score-paraphrases"
          else ["pair-stats", str(source), "--json", str(output)])
  err = _fails(argv, capsys, message)
  assert "bt.jsonl:2: " in err
  assert not output.exists()
  assert not os.path.exists(files.settings_path(str(output)))


def test_scored_records_are_valid_json(tmp_path):
  source, output = tmp_path / "bt.jsonl", tmp_path / "out.jsonl"
  source.write_text(_records(4))
  assert cli.main(["score-paraphrases", "--input", str(source), "--output",
                   str(output)]) == 0
  for line in output.read_text().splitlines():
    json.loads(line, parse_constant=pytest.fail)


# --- one reading of text -------------------------------------------------------


_ARGV_OF_TEXT = {  # a command that reads one text file IN, writes OUT
    "score-paraphrases": ["score-paraphrases", "--input", "IN", "--output",
                          "OUT"],
    "beam-score": ["beam-score", "--input", "IN", "--output", "OUT"],
    "pair-stats": ["pair-stats", "IN", "--json", "OUT"],
    "train-lm": ["train-lm", "--input", "IN", "--output", "OUT"],
}


@pytest.mark.parametrize("content, message", [
    (b"", "empty file, nothing to read"),
    (b"a man\rplays\rnow\r", "character U+000D at column 6"),
    (b"a man\x00plays\n", "character U+0000 at column 6"),
    ("a man\n".encode("utf-16"), "UTF-16 text; paraflax reads UTF-8"),
])
@pytest.mark.parametrize("command", sorted(_ARGV_OF_TEXT))
def test_text_is_read_one_way_by_every_command(command, content, message,
                                               tmp_path, capsys):
  source, output = tmp_path / "in", tmp_path / "out"
  source.write_bytes(content)
  argv = [str(source) if a == "IN" else str(output) if a == "OUT" else a
          for a in _ARGV_OF_TEXT[command]]
  _fails(argv, capsys, message)
  assert not output.exists()


def test_only_lf_ends_a_line_for_every_reader(tmp_path):
  from paraflax.data import readers  # pylint: disable=g-import-not-at-top
  path = tmp_path / "t"
  path.write_text("a\u2028b\x85c\x0bd\x12e\nf\n", encoding="utf-8")
  assert readers.read_lines(path)[0] == list(readers.iter_lines(path)) == \
      ["a\u2028b\x85c\x0bd\x12e", "f"]


def test_crlf_line_ends_are_read_as_lf(tmp_path):
  from paraflax.data import readers  # pylint: disable=g-import-not-at-top
  crlf, lf = tmp_path / "crlf", tmp_path / "lf"
  crlf.write_bytes(b"a b\r\nc d\r\n")
  lf.write_bytes(b"a b\nc d\n")
  assert readers.read_lines(crlf)[0] == readers.read_lines(lf)[0] == \
      list(readers.iter_lines(crlf)) == ["a b", "c d"]


@pytest.mark.parametrize("path, message", [
    ("-", "standard input is not read by paraflax"),
    ("loop", "a symbolic link that leads to no file"),
])
def test_stdin_and_link_loops_are_named(path, message, tmp_path, capsys):
  (tmp_path / "loop").symlink_to(tmp_path / "loop")
  source = path if path == "-" else str(tmp_path / path)
  _fails(["score-paraphrases", "--input", source, "--output",
          str(tmp_path / "out")], capsys, message)


# --- embedding files that say what they hold -------------------------------------


def _embedded(tmp: pathlib.Path, fp16: bool = False) -> str:
  path = str(tmp / "x.emb")
  embeddings_io.write(path, np.random.default_rng(0).normal(
      size=(8, 2)).astype(np.float32), fp16=fp16)
  return path


@pytest.mark.parametrize("fp16, flags, message", [
    (False, ["--dim", "4"], "holds embeddings of dim 2 (says "),
    (True, ["--dim", "2"], "holds float16 (says "),
    (False, ["--dim", "2", "--fp16"], "holds float32 (says "),
])
def test_a_file_read_with_the_wrong_shape_or_type_stops(
    fp16, flags, message, tmp_path, capsys):
  path = _embedded(tmp_path, fp16)
  _fails(["mine", "--src-emb", path, "--tgt-emb", path, *flags, "--output",
          str(tmp_path / "out")], capsys, message)
  assert not (tmp_path / "out").exists()


def test_a_sidecar_gives_the_dimension(tmp_path):
  path = _embedded(tmp_path)
  assert embeddings_io.read(path, None).shape == (8, 2)
  assert json.loads(pathlib.Path(embeddings_io.info_path(path)).read_text()
                    )["dtype"] == "float32"


def test_a_truncated_file_with_a_sidecar_stops(tmp_path, capsys):
  path = _embedded(tmp_path)
  with open(path, "r+b") as f:
    f.truncate(4 * 2 * 4)  # 4 of 8 rows
  _fails(["mine", "--src-emb", path, "--tgt-emb", path, "--output",
          str(tmp_path / "out")], capsys, "the file changed after it was")


def test_a_tab_inside_a_mined_sentence_stops(tmp_path, capsys):
  path = _embedded(tmp_path)
  text = tmp_path / "x.txt"
  text.write_text("".join(f"s {i}\n" for i in range(7)) + "a\tb\n")
  _fails(["mine", "--src-emb", path, "--tgt-emb", path, "--src-text",
          str(text), "--tgt-text", str(text), "--k", "2", "--output",
          str(tmp_path / "out")], capsys, "x.txt:8: a tab inside a sentence")


# --- the rest ------------------------------------------------------------------


def test_a_sweep_point_spelled_two_ways_is_refused(tmp_path, capsys):
  sweep = tmp_path / "sweep.py"
  sweep.write_text(
      "import ml_collections\n"
      "def get_config():\n"
      "  return ml_collections.ConfigDict(dict(base='configs/avg.py', "
      "settings={}, overrides=(), points=('loss.margin=0.5', ('loss.margin=0.5', 'seed=0')), "
      "axes=(), columns=()))\n")
  _fails(["sweep", "--config", str(sweep), "--workdir", str(tmp_path / "w"),
          "--dry-run"], capsys, "give the same config")


def test_beam_score_leaves_no_temporary_folder(tmp_path):
  source, temp = tmp_path / "bt.jsonl", tmp_path / "tmp"
  source.write_text(_records(5))
  temp.mkdir()
  subprocess.run([sys.executable, "-m", "paraflax.cli", "beam-score",
                  "--input", str(source), "--output", str(tmp_path / "out")],
                 cwd=ROOT, env={**os.environ, "TMPDIR": str(temp)},
                 check=True, capture_output=True)
  assert not list(temp.iterdir())


def test_a_damaged_checkpoint_is_one_message(tmp_path):
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  from paraflax import errors  # pylint: disable=g-import-not-at-top
  from paraflax.training import checkpointing  # pylint: disable=g-import-not-at-top
  state = {"params": {"w": jnp.arange(64.0)}}
  saver = checkpointing.Checkpoints(str(tmp_path), keep=1, best_metric=None)
  saver.save(3, state)
  saver.close()
  for path in (tmp_path / "checkpoints" / "3").rglob("*"):
    if path.is_file() and path.stat().st_size:
      path.write_bytes(b"\0" * 7)  # every file of the state cut to junk
  with pytest.raises(errors.DataError, match=r"checkpoints/3: this "
                     r"checkpoint cannot be read \(.*remove that folder"):
    checkpointing.restore_for_inference(str(tmp_path), state)


@pytest.mark.parametrize("command", ["train-lm", "select-domain"])
def test_a_tsv_where_sentences_are_expected_names_the_spec(command, tmp_path,
                                                           capsys):
  tsv = tmp_path / "pairs.tsv"
  tsv.write_text("ein Mann\ta man\n")
  (tmp_path / "g.en").write_text("a man\n")
  argv = (["train-lm", "--input", str(tsv), "--output", str(tmp_path / "o")]
          if command == "train-lm" else
          ["select-domain", "--in-domain", str(tsv), "--general-src",
           str(tmp_path / "g.en"), "--general-tgt", str(tmp_path / "g.en"),
           "--src-lang", "de", "--output", str(tmp_path / "o")])
  _fails(argv, capsys, f"pairs.tsv:1: a tab; this file is read as one "
         f"sentence per line")
  assert not (tmp_path / "o").exists()
