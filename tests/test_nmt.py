"""NMT recipe, `translate` and `backtranslate` on a tiny model of real
multi30k de-en (mechanics, not quality)."""
import json
import re
import shutil
import subprocess
import sys

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from paraflax import cli
from paraflax import config as config_lib
from paraflax import errors
from paraflax.data import bitext
from paraflax.decoding import translator as translator_lib
from paraflax.recipes import nmt
from paraflax.training import partitioning
from tests.conftest import ROOT
from tests.conftest import TINY_NMT
from tests.conftest import multi30k_val


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
  path = tmp_path_factory.mktemp("nmt") / "w"
  assert cli.main(["train", "--config", f"{ROOT}/configs/nmt.py:de",
                   "--workdir", str(path), *TINY_NMT]) == 0
  last = json.loads((path / "metrics.jsonl").read_text().splitlines()[-1])
  assert last["dev/bleu"] >= 0 and last["dev/length_ratio"] >= 0
  assert 0 <= last["dev/hit_max_output"] <= 100
  return path


@pytest.fixture(scope="module")
def val_files(tmp_path_factory):
  return multi30k_val(tmp_path_factory.mktemp("val"), 70)


def _translate(workdir, tmp_path, text: str, *extra):
  source, target = tmp_path / "in.de", tmp_path / "out.en"
  source.write_text(text, "utf-8")
  code = cli.main(["translate", "--workdir", str(workdir), "--input",
                   str(source), "--output", str(target), *extra])
  return code, target


def test_translate_one_line_out_per_line_in(workdir, tmp_path):
  lines = ["Ein Mann fährt Fahrrad.", "", "Zwei Hunde spielen im Schnee.",
           "Eine Frau liest ein Buch."]
  code, target = _translate(workdir, tmp_path, "\n".join(lines) + "\n",
                            "--beam", "3")
  assert code == 0
  out = target.read_text("utf-8").split("\n")[:-1]
  assert len(out) == 4 and out[1] == ""
  code, target = _translate(workdir, tmp_path,
                            "\n".join(lines[::-1]) + "\n", "--beam", "3",
                            "--overwrite")
  assert target.read_text("utf-8").split("\n")[:-1] == out[::-1]
  code, target = _translate(workdir, tmp_path, "\n".join(lines) + "\n",
                            "--beam", "3", "--stop", "k_finished",
                            "--overwrite")
  assert code == 0 and len(target.read_text("utf-8").split("\n")) == 5


def test_the_api_translates_as_the_command(workdir, tmp_path):
  import paraflax  # pylint: disable=g-import-not-at-top
  lines = ["Ein Mann fährt Fahrrad.", "", "Zwei Hunde spielen im Schnee."]
  code, target = _translate(workdir, tmp_path, "\n".join(lines) + "\n",
                            "--beam", "3")
  assert code == 0
  model = paraflax.load(workdir)
  assert model.recipe == "nmt" and model.languages == ()
  assert model.translate(lines, beam=3) == \
      target.read_text("utf-8").split("\n")[:-1]
  nbest = model.translate(lines, beam=3, nbest=2)
  assert [len(h) for h in nbest] == [2, 0, 2]
  assert nbest[0][0].score >= nbest[0][1].score
  with pytest.raises(paraflax.ConfigError, match="nbest"):
    model.translate(lines, beam=2, nbest=3)
  with pytest.raises(paraflax.ConfigError, match="'paraphrase' or"):
    model.embed(lines)
  with pytest.raises(paraflax.ConfigError, match="'bilingual'"):
    model.score_pairs(lines, lines)


def test_translations_are_the_same_on_one_and_eight_devices(workdir,
                                                           val_files):
  lines = val_files[0].read_text("utf-8").splitlines()[:20]
  results = []
  for devices in (1, 8):
    translator, params, _ = nmt.load_translator(
        str(workdir), partitioning.make_mesh(devices))
    assert translator.mesh.size == devices
    sources = [translator.encode(s, f"val line {i}", "truncate")
               for i, s in enumerate(lines)]
    results.append(dict(translator.translate(params, sources, beam=4,
                                             nbest=2, batch_size=12)))
  for i, hyps in results[0].items():
    assert [h.text for h in hyps] == [h.text for h in results[1][i]]
    np.testing.assert_allclose([h.score for h in hyps],
                               [h.score for h in results[1][i]], atol=1e-5)


_UNENDED = (r"(\d+) of {} translations \(\d+\.\d %\) hit their output "
            r"limit \(decode.max_output_ratio=1.5 x source subwords \+ "
            r"decode.max_output_plus=10, at most decode.max_output=100\) "
            r"without ending")


def test_translate_says_how_many_hit_max_output(workdir, tmp_path, capsys):
  code, _ = _translate(workdir, tmp_path, "Ein Mann.\n\nZwei Hunde.\n")
  assert code == 0
  assert re.search(_UNENDED.format(2), capsys.readouterr().err)


def test_wider_source_padding_finds_the_same_translations(workdir):
  """data.width_multiple pads decoding's sources too (fewer compiled
  searches): the hypotheses are those of the default widths."""
  tr, params, _ = nmt.load_translator(str(workdir))
  wide = translator_lib.Translator(
      tr.model, tr.src_sp, tr.tgt_sp, tr.max_len, tr.max_output, tr.alpha,
      tr.mesh, tr.max_output_ratio, tr.max_output_plus, width_multiple=32)
  texts = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee.",
           "Eine Frau mit einem roten Hut steht vor einem kleinen Laden."]
  sources = [tr.encode(t, "t", "truncate") for t in texts]
  found = [dict(t.translate(params, sources, beam=3, nbest=2))
           for t in (tr, wide)]
  for i, hyps in found[0].items():
    assert [h.text for h in hyps] == [h.text for h in found[1][i]]
    np.testing.assert_allclose([h.score for h in hyps],
                               [h.score for h in found[1][i]], atol=1e-5)


def test_loading_a_translator_builds_no_optimizer(workdir, forbid):
  """Translating needs the model and its parameters, restored alone: no
  training recipe, no optimizer is built."""
  forbid("an optimizer was built to translate", (nmt.optimizers, "make"),
         (nmt, "NMTRecipe"))
  translator, params, step = nmt.load_translator(str(workdir))
  assert step > 0 and set(params) >= {"decoder"}
  assert translator.translate_texts(params)(["Ein Hund."], 2).texts[0]


def test_the_translator_marks_cut_hypotheses(workdir):
  """With EOS made impossible every hypothesis is cut at its output limit
  (1.5 x its source subwords + 10 by default; decode.max_output with the
  ratio off), and said to be."""
  translator, params, _ = nmt.load_translator(str(workdir))
  tr = translator
  uncapped = translator_lib.Translator(
      tr.model, tr.src_sp, tr.tgt_sp, tr.max_len, tr.max_output, tr.alpha,
      tr.mesh, 0.0, tr.max_output_plus)
  texts = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee."]
  logits = params["decoder"]["logits"]
  never_ends = dict(params, decoder=dict(params["decoder"], logits=dict(
      logits, bias=logits["bias"].at[bitext.EOS].add(-1e4))))
  assert translator.translate_texts(never_ends)(texts, 2).ended == [
      False, False]
  sources = [translator.encode(t, "t", "truncate") for t in texts]
  for found, limit in ((translator, lambda n: -(-3 * n // 2) + 10),
                       (uncapped, lambda n: 100)):
    for i, hyps in found.translate(never_ends, sources, beam=2, nbest=2):
      assert [(h.ended, h.tokens) for h in hyps] == [
          (False, limit(len(sources[i])))] * 2
  assert re.fullmatch(_UNENDED.format(2), translator.unended_note(2, 2))
  assert uncapped.unended_note(2, 2) == (
      "2 of 2 translations (100.0 %) hit decode.max_output=100 without "
      "ending")


@pytest.mark.parametrize("content, extra, message", [
    (b"Hallo\n", ("--beam", "0"), "beam must be >= 1"),
    (b"Hallo\nd\xe9j\xe0\n", (), ":2: invalid UTF-8"),
    (b"Hallo\n", ("--max-len", "1"), "--max-len 1: give at least 2"),
])
def test_translate_bad_input(workdir, tmp_path, capsys, content, extra,
                             message):
  source, target = tmp_path / "in.de", tmp_path / "out.en"
  source.write_bytes(content)
  code = cli.main(["translate", "--workdir", str(workdir), "--input",
                   str(source), "--output", str(target), *extra])
  assert code == cli.EXIT_BAD_INPUT
  assert message in capsys.readouterr().err
  assert not target.exists()


def test_translate_cuts_sources_at_max_len(workdir, tmp_path, capsys):
  long = " ".join(["Ein Mann fährt Fahrrad und"] * 20) + "\n"
  code, _ = _translate(workdir, tmp_path, long)
  assert code == 0
  assert re.search(r"1 truncated at \d+ subwords \(--max-len raises the "
                   r"limit\)", capsys.readouterr().err)
  code, _ = _translate(workdir, tmp_path, long, "--max-len", "400",
                       "--overwrite")
  assert code == 0 and "0 truncated at 400 subwords;" in \
      capsys.readouterr().err


def test_translate_needs_an_nmt_checkpoint(tmp_path, capsys):
  code, target = _translate(tmp_path / "none", tmp_path, "Hallo\n")
  assert code == cli.EXIT_BAD_INPUT and not target.exists()
  assert "paraflax train" in capsys.readouterr().err


def _backtranslate(workdir, val_files, output, *extra, nbest: str = "2"):
  src, ref = val_files
  return cli.main(["backtranslate", "--workdir", str(workdir), "--output",
                   str(output), "--src", str(src), "--ref", str(ref),
                   "--beam", "3", "--nbest", nbest, "--batch-size", "16",
                   *extra])


def test_backtranslate_records_and_resume(workdir, val_files, tmp_path,
                                         capsys):
  straight = tmp_path / "straight.jsonl"
  assert _backtranslate(workdir, val_files, straight) == 0
  assert re.search(_UNENDED.format(70), capsys.readouterr().err)
  data = straight.read_bytes()
  records = [json.loads(l) for l in data.splitlines()]
  assert len(records) == 70 * 2
  assert sorted({r["id"] for r in records}) == list(range(70))
  refs = val_files[1].read_text("utf-8").splitlines()
  for r in records:
    assert set(r) == {"id", "reference", "translation", "rank", "cost",
                      "nll", "source"}
    assert r["reference"] == refs[r["id"]] and r["cost"] > 0
    assert r["nll"] >= r["cost"]  # the whole NLL, cost that per subword
  # A run killed inside the 3rd batch's write: 2 batches and a half line.
  lines = data.split(b"\n")
  killed = tmp_path / "killed.jsonl"
  killed.write_bytes(b"\n".join(lines[:2 * 16 * 2 + 5]) + b"\n"
                     + lines[2 * 16 * 2 + 5][:10])
  shutil.copyfile(f"{straight}.meta.json", f"{killed}.meta.json")
  assert _backtranslate(workdir, val_files, killed) == 0
  assert killed.read_bytes() == data
  assert _backtranslate(workdir, val_files, killed) == 0  # nothing left
  assert killed.read_bytes() == data


def test_two_identical_backtranslate_runs_at_once_write_each_record_once(
    workdir, val_files, tmp_path):
  src, ref = val_files
  argv = [sys.executable, "-m", "paraflax.cli", "backtranslate", "--workdir",
          str(workdir), "--output", str(tmp_path / "bt.jsonl"), "--src",
          str(src), "--ref", str(ref), "--beam", "3", "--nbest", "2",
          "--batch-size", "16"]
  runs = [subprocess.Popen(argv, cwd=ROOT, stderr=subprocess.PIPE,
                           stdout=subprocess.DEVNULL, text=True)
          for _ in range(2)]
  for run in runs:
    err = run.communicate(timeout=300)[1]
    assert run.returncode == 0 or (run.returncode == cli.EXIT_BAD_INPUT
                                   and "another run (process " in err), err
  assert {run.returncode for run in runs} != {cli.EXIT_BAD_INPUT}
  records = [json.loads(l) for l in
             (tmp_path / "bt.jsonl").read_text("utf-8").splitlines()]
  assert sorted((r["id"], r["rank"]) for r in records) == \
      [(i, k) for i in range(70) for k in range(2)]


def test_backtranslation_output_is_a_paraphrase_task(workdir, val_files,
                                                     tmp_path):
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  output = tmp_path / "bt.jsonl"
  assert _backtranslate(workdir, val_files, output) == 0
  pairs = tasks.examples(tasks.BACKTRANSLATED + str(output), "train")
  refs = val_files[1].read_text("utf-8").splitlines()
  assert len(pairs) == 70  # rank 0 of each input
  assert sorted(p["sentence1"] for p in pairs) == sorted(refs)


def test_half_written_jsonl_is_named(tmp_path):
  from paraflax.data import jsonl  # pylint: disable=g-import-not-at-top
  path = tmp_path / "bt.jsonl"
  path.write_text('{"id": 0, "reference": "a", "translation": "b", '
                  '"rank": 0}\n{"id": 1, "refer\n')
  with pytest.raises(errors.DataError, match="bt.jsonl:2: not JSON"):
    jsonl.read_jsonl(path, keys=("reference",))


def test_backtranslate_nbest_over_beam_writes_nothing(workdir, val_files,
                                                      tmp_path, capsys):
  output = tmp_path / "bt.jsonl"
  assert _backtranslate(workdir, val_files, output, nbest="5") == \
      cli.EXIT_BAD_INPUT
  assert "nbest <= beam" in capsys.readouterr().err
  assert not output.exists()


def test_bucket_stream_is_a_function_of_the_step():
  rng = np.random.default_rng(0)
  data = bitext.EncodedBitext(
      tuple(rng.integers(2, 50, rng.integers(2, 30)) for _ in range(300)),
      tuple(rng.integers(2, 50, rng.integers(2, 30)) for _ in range(300)))
  stream = bitext.BucketStream(data, batch=20, shards=8, seed=1, window=4)
  again = bitext.BucketStream(data, batch=20, shards=8, seed=1, window=4)
  for step in (0, 7, 15, 16, 40):
    a, b = stream.get(step), again.get(step)
    for k in a:
      np.testing.assert_array_equal(a[k], b[k])
  batch = stream.get(3)
  assert batch["src"].shape == batch["tgt_out"].shape  # one width
  assert batch["src"].shape[0] == 24 and (batch["src_len"][20:] == 0).all()
  np.testing.assert_array_equal(batch["tgt_in"][:, 1:], batch["tgt_out"][:, :-1])
  seen = np.concatenate([stream.rows(s)
                         for s in range(stream.batches_per_epoch)])
  assert len(set(seen.tolist())) == len(seen) == 300


def test_nmt_batches_follow_the_longer_side():
  """Sorted by target length alone, a batch is padded to its longest
  source: uncorrelated lengths make that nearly the maximum."""
  rng = np.random.default_rng(0)
  data = bitext.EncodedBitext(
      *[tuple(rng.integers(2, 50, rng.integers(2, 60)) for _ in range(640))
        for _ in "st"])
  slots = {key: sum(bitext.BucketStream(data, 32, sort_by=key, window=20)
                    .get(step)["src"].size for step in range(20))
           for key in bitext.SORT_KEYS}
  assert slots["longer"] < 0.8 * slots["target"]


def test_width_multiple_leaves_fewer_widths_and_the_same_rows():
  rng = np.random.default_rng(0)
  data = bitext.EncodedBitext(
      *[tuple(rng.integers(2, 50, rng.integers(2, 64)) for _ in range(640))
        for _ in "st"])
  fine = bitext.BucketStream(data, 32, window=4)
  coarse = bitext.BucketStream(data, 32, window=4, width_multiple=32)
  widths = {8: set(), 32: set()}
  for step in range(20):
    a, b = fine.get(step), coarse.get(step)
    widths[8].add(a["src"].shape[1])
    widths[32].add(b["src"].shape[1])
    width = a["src"].shape[1]
    for key in ("src_len", "tgt_len"):
      np.testing.assert_array_equal(b[key], a[key])
    for key in ("src", "tgt_out"):  # the same batch, only padded wider
      np.testing.assert_array_equal(b[key][:, :width], a[key])
      assert not b[key][:, width:].any()
  assert widths[32] == {32, 64} and len(widths[8]) > 2


class _Counted(tuple):
  """Rows that record which were read whole (lengths come from `lengths`,
  as the cache's offsets give them)."""

  def __new__(cls, rows, read):
    out = super().__new__(cls, rows)
    out.read = read
    return out

  def __getitem__(self, i):
    self.read.add(int(i))
    return super().__getitem__(i)

  def lengths(self, rows):
    return np.asarray([len(super(_Counted, self).__getitem__(int(i)))
                       for i in rows], np.int64)


def test_each_process_reads_only_its_block_of_a_batch():
  """Blocks of 2 processes, in process order, are the one-process batch
  (same width), and a process reads no row of the other's block."""
  rng = np.random.default_rng(0)
  sides = [tuple(rng.integers(2, 50, rng.integers(2, 40)) for _ in range(400))
           for _ in "st"]
  whole = bitext.BucketStream(bitext.EncodedBitext(*sides), 20, shards=8,
                              window=4)
  for step in (0, 5, 19, 20, 33):
    reads = []
    blocks = []
    for index in range(2):
      read = set()
      data = bitext.EncodedBitext(*[_Counted(s, read) for s in sides])
      blocks.append(bitext.BucketStream(data, 20, shards=8, window=4,
                                        process=(index, 2)).get(step))
      reads.append(read)
    expected = whole.get(step)
    for key, value in expected.items():
      np.testing.assert_array_equal(
          np.concatenate([b[key] for b in blocks]), value)
    rows = whole.rows(step).tolist()
    assert reads[0] == set(rows[:12]) and reads[1] == set(rows[12:])


def test_processes_must_split_the_batch_shards_evenly():
  data = bitext.EncodedBitext(((3, 4),) * 8, ((3, 4),) * 8)
  with pytest.raises(ValueError, match="split evenly"):
    bitext.BucketStream(data, 4, shards=2, process=(0, 4))


@pytest.mark.parametrize("value", [0, -8, 8.5])
def test_a_bad_width_multiple_stops_before_any_work(value):
  config = ml_collections.ConfigDict({"data": {"width_multiple": value}})
  with pytest.raises(errors.ConfigError, match="data.width_multiple"):
    bitext.width_multiple(config)


def test_stop_choices_are_the_registry():
  from paraflax.decoding import beam_search  # pylint: disable=g-import-not-at-top
  commands = cli._parser()._subparsers._group_actions[0].choices  # pylint: disable=protected-access
  for name in ("translate", "backtranslate"):
    stop, = [a for a in commands[name]._actions if a.dest == "stop"]  # pylint: disable=protected-access
    assert sorted(stop.choices) == sorted(beam_search.STOP_RULES)


def test_eval_gives_the_bleu_the_train_loop_logged(workdir, capsys):
  assert cli.main(["eval", "--workdir", str(workdir), "--only", "dev"]) == 0
  assert "== dev (checkpoint step" in capsys.readouterr().out
  saved = json.loads((workdir / "evals.json").read_text())
  logged = [json.loads(l) for l in (workdir / "metrics.jsonl").read_text(
      ).splitlines()]
  bleu = next(r["dev/bleu"] for r in logged
              if r["step"] == saved["checkpoint_step"] and "dev/bleu" in r)
  assert saved["dev"]["bleu"] == pytest.approx(bleu, abs=1e-9)
  assert saved["dev"]["n"] == 20


def _eval(workdir, output, *extra):
  return cli.main(["eval", "--workdir", str(workdir), "--only", "dev",
                   "--output", str(output), *extra])


def test_eval_decode_settings_change_that_evaluation_only(workdir,
                                                           tmp_path):
  config = (workdir / "config.json").read_bytes()
  assert _eval(workdir, tmp_path / "default.json") == 0
  assert _eval(workdir, tmp_path / "cut.json", "--decode",
               "max_output=2") == 0
  default, cut = (json.loads((tmp_path / f).read_text())
                  for f in ("default.json", "cut.json"))
  assert "decode" not in default and cut["decode"] == ["max_output=2"]
  assert cut["dev"]["length_ratio"] < default["dev"]["length_ratio"]
  assert cut["dev"]["hit_max_output"] == 100
  assert (workdir / "config.json").read_bytes() == config


@pytest.mark.parametrize("setting, says", [
    ("no_such_key=1", "KEY one of alpha, max_output"),
    ("max_output=two", "max_output takes a whole number"),
    ("max_output", "give KEY=VALUE")])
def test_a_bad_decode_setting_stops_before_any_work(workdir, tmp_path,
                                                    capsys, setting, says):
  assert _eval(workdir, tmp_path / "e.json", "--decode",
               setting) == cli.EXIT_BAD_INPUT
  assert says in capsys.readouterr().err
  assert not (tmp_path / "e.json").exists()


def test_eval_never_writes_over_a_file_it_did_not_write(workdir, capsys):
  config = (workdir / "config.json").read_bytes()
  assert _eval(workdir, workdir / "config.json") == cli.EXIT_BAD_INPUT
  assert "not the output of an evaluation" in capsys.readouterr().err
  assert (workdir / "config.json").read_bytes() == config


# ------------------------------------ OpenNMT-py's choices, keys


def _tiny(cell="gru", **options):
  from paraflax.models import nmt as nmt_model  # pylint: disable=g-import-not-at-top
  model = nmt_model.AttentionNMT(src_vocab=30, tgt_vocab=20, emb_dim=8,
                                 hidden=6, attention_dim=5, cell=cell,
                                 **options)
  src = np.array([[5, 6, 7, 1, 0, 0], [8, 9, 10, 11, 12, 1]], np.int32)
  src_len = np.array([4, 6], np.int32)
  tgt_in = np.array([[0, 3, 4, 5], [0, 6, 7, 8]], np.int32)
  params = model.init(jax.random.key(0), src, src_len, tgt_in)["params"]
  return model, params, (src, src_len, tgt_in)


def _stepwise_logits(model, params, src, src_len, tgt_in):
  from paraflax.models import nmt as nmt_model  # pylint: disable=g-import-not-at-top
  encoded = model.apply({"params": params}, src, src_len,
                        method=nmt_model.AttentionNMT.encode)
  carry = model.apply({"params": params}, encoded,
                      method=nmt_model.AttentionNMT.init_carry)
  out = []
  for t in range(tgt_in.shape[1]):
    logits, carry = model.apply({"params": params}, encoded, carry,
                                tgt_in[:, t],
                                method=nmt_model.AttentionNMT.decode_step)
    out.append(logits)
  return np.stack(out, 1), carry


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_input_feeding_feeds_the_attentional_vector(cell):
  model, params, batch = _tiny(cell, input_feeding=True)
  plain_model, plain, _ = _tiny(cell)
  assert "attentional" in params["decoder"]
  assert "readout" not in params["decoder"]
  assert "readout" in plain["decoder"]  # the paper's default is unchanged
  # rnn input: [y_prev (8); attentional vector (6)]
  kernel = params["decoder"]["rnn"]
  first = kernel["ir" if cell == "gru" else "ii"]["kernel"]
  assert first.shape == (8 + 6, 6)
  logits = model.apply({"params": params}, *batch)
  assert logits.shape == (2, 4, 20)
  stepwise, (_, feed) = _stepwise_logits(model, params, *batch)
  np.testing.assert_allclose(logits, stepwise, atol=1e-5)
  assert feed.shape == (2, 6) and bool(jnp.any(feed != 0))
  # The fed vector is what the logits are made of.
  np.testing.assert_allclose(
      stepwise[:, -1], feed @ params["decoder"]["logits"]["kernel"]
      + params["decoder"]["logits"]["bias"], atol=1e-5)
  assert plain_model.apply({"params": plain}, *batch).shape == logits.shape


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_the_final_bridge_starts_from_the_last_real_states(cell):
  from paraflax.models import nmt as nmt_model  # pylint: disable=g-import-not-at-top
  model, params, (src, src_len, tgt_in) = _tiny(cell, bridge_type="final")
  encoded = model.apply({"params": params}, src, src_len,
                        method=nmt_model.AttentionNMT.encode)
  carry = model.apply({"params": params}, encoded,
                      method=nmt_model.AttentionNMT.init_carry)
  h = carry[1] if cell == "lstm" else carry
  states, hidden = encoded["states"], 6
  last = np.concatenate([states[np.arange(2), src_len - 1, :hidden],
                         states[:, 0, hidden:]], -1)  # fwd at end, bwd at 0
  np.testing.assert_allclose(encoded["final_h"], last, atol=1e-6)
  np.testing.assert_allclose(h, jax.nn.relu(
      last @ params["bridge"]["kernel"] + params["bridge"]["bias"]),
                             atol=1e-6)
  if cell == "lstm":
    assert "bridge_c" in params and bool(jnp.any(carry[0] != 0))
  # Padding after the source changes nothing.
  wider = np.pad(src, ((0, 0), (0, 3)))
  again = model.apply({"params": params}, wider, src_len,
                      method=nmt_model.AttentionNMT.encode)
  np.testing.assert_allclose(again["final_h"], encoded["final_h"], atol=1e-6)
  assert model.apply({"params": params}, src, src_len, tgt_in).shape == (
      2, 4, 20)
  with pytest.raises(ValueError, match="model.bridge"):
    _tiny(cell, bridge_type="last")


class _Vocab:
  def get_piece_size(self) -> int:
    return 20


def _recipe(**loss):
  from paraflax import config as config_lib  # pylint: disable=g-import-not-at-top
  config = config_lib.load(f"{ROOT}/configs/nmt.py:de")
  config.model.update(emb_dim=8, hidden=6, attention_dim=5)
  config.loss.update(loss)
  return nmt.NMTRecipe(config, _Vocab(), _Vocab(), None,
                       partitioning.make_mesh(1))


def test_loss_normalize_divides_by_tokens_or_sentences():
  batch = {"src": np.array([[5, 6, 1, 0], [7, 1, 0, 0], [0, 0, 0, 0]],
                           np.int32),
           "src_len": np.array([3, 2, 0], np.int32),
           "tgt_out": np.array([[3, 1, 0, 0], [4, 5, 6, 1], [0, 0, 0, 0]],
                               np.int32),
           "tgt_len": np.array([2, 4, 0], np.int32)}  # a padding row
  batch["tgt_in"] = np.concatenate([np.zeros((3, 1), np.int32),
                                    batch["tgt_out"][:, :-1]], 1)
  tokens, sentences = _recipe(), _recipe(normalize="sentences")
  params = tokens.init_state(jax.random.key(0))["params"]
  per_token, count = tokens._loss(params, batch)  # pylint: disable=protected-access
  per_sentence, _ = sentences._loss(params, batch)  # pylint: disable=protected-access
  assert float(count) == 6
  np.testing.assert_allclose(per_sentence, per_token * 6 / 2, rtol=1e-6)
  logprobs = jax.nn.log_softmax(tokens.model.apply({"params": params},
                                                   batch["src"],
                                                   batch["src_len"],
                                                   batch["tgt_in"]))
  nll = -np.take_along_axis(np.asarray(logprobs), batch["tgt_out"][..., None],
                            -1)[..., 0]
  smooth = -np.asarray(logprobs).mean(-1)
  mask = np.arange(4)[None] < batch["tgt_len"][:, None]
  want = np.sum((0.9 * nll + 0.1 * smooth) * mask) / 2  # EOS scored, pad not
  np.testing.assert_allclose(per_sentence, want, rtol=1e-5)
  config = config_lib.load(f"{ROOT}/configs/nmt.py:de")
  config.loss.normalize = "words"
  with pytest.raises(errors.ConfigError, match="loss.normalize"):
    nmt.check(config, files=False)
