"""`paraflax select-domain` and `eval-domain`: diffCE is the difference of
KenLM's own log10 scores as cross-entropies; bins have equal sizes and are
ordered; the ranks of the streamed binning equal a sort; bad inputs stop
before any output; a killed run resumes to the uninterrupted one's files;
each bin is a seqio Task; the evaluation writes its table and plot.

In-domain: biomedical sentences; general: Multi30k val de-en with a few
biomedical sentences mixed in (real data, small slices). Needs KenLM's
tools (launch/build_kenlm.sh), as tests/test_lm.py.
"""
import gzip
import json
import math
import os
import pathlib
import subprocess
import sys

import kenlm
import numpy as np
import pytest

from paraflax import cli
from paraflax import config as config_lib
from paraflax import errors
from paraflax.data import paths
from paraflax.domain import binning
from paraflax.domain import selection
from paraflax.filtering import lm
from tests.conftest import ROOT

CONFIG = str(ROOT / "configs" / "domain.py")
# Tiny corpora: lmplz's defaults where its discounts cannot be estimated.
SMALL = ("--config.discount_fallback=true", "--config.block=100")


def _gz_lines(*parts: str) -> list[str]:
  with gzip.open(paths.data_path(*parts), "rt", encoding="utf-8") as f:
    return f.read().splitlines()


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[str, str]:
  folder = tmp_path_factory.mktemp("domain")
  biomed = _gz_lines("mono_en_domains", "biomed",
                     "ner_NCBI-disease_dev.tok.en.gz")
  extra = _gz_lines("mono_en_domains", "biomed", "ner_bc5cdr_dev.tok.en.gz")
  de = _gz_lines("multi30k_task1", "val.de.gz")[:500] + extra[:60]
  en = _gz_lines("multi30k_task1", "val.en.gz")[:500] + extra[:60]
  texts = {"in_domain": biomed[:300], "src": de, "tgt": en,
           "test": extra[100:160]}
  out = {}
  for name, lines in texts.items():
    out[name] = str(folder / f"{name}.txt")
    pathlib.Path(out[name]).write_text("\n".join(lines) + "\n", "utf-8")
  return out


def _argv(corpora: dict[str, str], output: str, *extra: str) -> list[str]:
  return ["select-domain", "--in-domain", corpora["in_domain"],
          "--general-src", corpora["src"], "--general-tgt", corpora["tgt"],
          "--src-lang", "de", "--output", output, *SMALL, *extra]


@pytest.fixture(scope="module")
def selected(corpora, tmp_path_factory) -> str:
  output = str(tmp_path_factory.mktemp("selected") / "sel")
  assert cli.main(_argv(corpora, output)) == 0
  return output


def _table(folder: str) -> list[tuple[int, float, float, float, int]]:
  rows = pathlib.Path(folder, "scores.tsv").read_text("utf-8").splitlines()
  assert rows[0] == selection.HEADER.strip()
  return [(int(l), float(a), float(b), float(d), int(n))
          for l, a, b, d, n in (r.split("\t") for r in rows[1:])]


def _kenlm_cross_entropy(model: kenlm.Model, tokens: str) -> float:
  """Bits per token from KenLM's own per-token log10 probabilities."""
  logs = [p for p, _, _ in model.full_scores(tokens, bos=True, eos=True)]
  return -sum(logs) / len(logs) / math.log10(2.0)


def test_diffce_is_the_difference_of_kenlm_cross_entropies(corpora,
                                                           selected):
  inside = kenlm.Model(os.path.join(selected, "in_domain.lm"))
  outside = kenlm.Model(os.path.join(selected, "general.lm"))
  vocabulary = selection.read_vocabulary(selected)
  assert vocabulary and lm.OOV not in vocabulary
  english = pathlib.Path(corpora["tgt"]).read_text("utf-8").splitlines()
  for line, h_in, h_out, diff, _ in _table(selected):
    tokens = lm.sentence(english[line - 1], vocabulary)
    want_in = _kenlm_cross_entropy(inside, tokens)
    want_out = _kenlm_cross_entropy(outside, tokens)
    assert h_in == pytest.approx(want_in, abs=1e-5)
    assert h_out == pytest.approx(want_out, abs=1e-5)
    assert diff == pytest.approx(want_in - want_out, abs=2e-5)
    assert math.log2(inside.perplexity(tokens)) == pytest.approx(h_in,
                                                                 abs=1e-5)


def test_bins_are_equal_ordered_and_line_aligned(corpora, selected):
  table = _table(selected)
  summary = json.loads(pathlib.Path(selected, "summary.json").read_text())
  bins = summary["settings"]["bins"]
  assert [r[0] for r in table] == list(range(1, len(table) + 1))
  sizes = [sum(r[4] == b for r in table) for b in range(bins + 1)]
  assert sizes[0] == 300  # the general LM's sample: as many as in-domain
  assert max(sizes[1:]) - min(sizes[1:]) <= 1
  assert sum(sizes[1:]) == summary["selectable"] == len(table) - 300
  for b in range(1, bins):
    assert (max(r[3] for r in table if r[4] == b)
            <= min(r[3] for r in table if r[4] == b + 1))
  src = pathlib.Path(corpora["src"]).read_text("utf-8").splitlines()
  tgt = pathlib.Path(corpora["tgt"]).read_text("utf-8").splitlines()
  for b in range(1, bins + 1):
    lines = [r[0] - 1 for r in table if r[4] == b]
    got_de = pathlib.Path(selected, f"bin_{b}.de").read_text("utf-8")
    got_en = pathlib.Path(selected, f"bin_{b}.en").read_text("utf-8")
    assert got_de.splitlines() == [src[i] for i in lines]
    assert got_en.splitlines() == [tgt[i] for i in lines]
  sample = [tgt[r[0] - 1] for r in table if r[4] == 0]
  assert pathlib.Path(selected, "lm_sample.en").read_text(
      "utf-8").splitlines() == sample
  # The biomedical sentences mixed into the general side rank first.
  biomed = [r for r in table if r[0] > 500 and r[4]]
  assert sum(r[4] == 1 for r in biomed) > 0.8 * len(biomed)


def test_random_bins_are_same_size_controls(corpora, selected):
  """random_<i>: the selectable pairs of the diffCE bins, in a seeded
  random order, cut into bins of the same sizes; Tasks selected:SEL:r<i>."""
  summary = json.loads(pathlib.Path(selected, "summary.json").read_text())
  assert ([s["size"] for s in summary["random_bins"]]
          == [s["size"] for s in summary["bins"]])
  assert [s["bin"] for s in summary["random_bins"]] == [
      f"r{i}" for i in range(1, 9)]

  def rows(prefix: str) -> list[tuple[str, str]]:
    return [pair for i in range(1, 9) for pair in zip(*(
        pathlib.Path(selected, f"{prefix}_{i}.{l}").read_text(
            "utf-8").splitlines() for l in ("de", "en")))]

  assert sorted(rows("random")) == sorted(rows("bin"))
  lines = np.arange(10_000)
  np.testing.assert_array_equal(binning.random_keys(lines, 0),
                                binning.random_keys(lines, 0))
  assert len(set(binning.random_keys(lines, 0).tolist())) == 10_000
  assert not np.array_equal(np.argsort(binning.random_keys(lines, 0)),
                            np.argsort(binning.random_keys(lines, 1)))
  # The biomedical rows (after line 500) fill diffCE bin 1, but spread
  # over the random bins.
  english = pathlib.Path(corpora["tgt"]).read_text("utf-8").splitlines()
  biomed = set(english[500:])
  first = pathlib.Path(selected, "random_1.en").read_text("utf-8")
  assert sum(e in biomed for e in first.splitlines()) < 0.5 * len(biomed)
  from paraflax.data import tasks  # pylint: disable=import-outside-toplevel
  got = tasks.examples(f"selected:{selected}:r1", "train")
  assert [r["target"] for r in got] == first.splitlines()


@pytest.mark.parametrize("run", [1, 3, 7])
def test_streamed_bins_equal_a_sort_with_ties(run):
  rng = np.random.default_rng(run)
  values = rng.integers(-3, 4, size=50).astype(np.float64) / 4  # many ties
  keys = binning.sortable(values)
  runs = np.concatenate([np.sort(keys[a:a + run])
                         for a in range(0, len(keys), run)])
  bins = 6
  binner = binning.Binner(runs, run, binning.bin_starts(len(values), bins))
  got = np.concatenate([binner(keys[a:a + 4]) for a in range(0, 50, 4)])
  rank = np.empty(50, np.int64)
  rank[np.lexsort((np.arange(50), values))] = np.arange(50)
  starts = [0, *binning.bin_starts(50, bins)]
  want = np.searchsorted(starts, rank, side="right")
  np.testing.assert_array_equal(got, want)


def _bad(tmp_path, corpora, capsys, **change) -> str:
  argv = _argv({**corpora, **change}, str(tmp_path / "out"))
  assert cli.main(argv) == cli.EXIT_BAD_INPUT
  assert not (tmp_path / "out").exists()
  assert not (tmp_path / "out.meta.json").exists()
  return capsys.readouterr().err


def test_empty_in_domain_file(tmp_path, corpora, capsys):
  empty = tmp_path / "empty.txt"
  empty.write_text("\n\n")
  err = _bad(tmp_path, corpora, capsys, in_domain=str(empty))
  assert f"{empty}: no sentence" in err


def test_general_files_of_different_line_counts(tmp_path, corpora, capsys):
  short = tmp_path / "short.de"
  lines = pathlib.Path(corpora["src"]).read_text("utf-8").splitlines()
  short.write_text("\n".join(lines[:-3]) + "\n", "utf-8")
  err = _bad(tmp_path, corpora, capsys, src=str(short))
  assert f"{short} has {len(lines) - 3} lines" in err
  assert f"Line {len(lines) - 2} of {corpora['tgt']}" in err


def test_more_bins_than_sentences(tmp_path, corpora, capsys):
  argv = _argv(corpora, str(tmp_path / "out"), "--bins", "261")
  assert cli.main(argv) == cli.EXIT_BAD_INPUT
  assert "more bins than sentences" in capsys.readouterr().err
  assert not (tmp_path / "out").exists()


def _run(argv: list[str], crash_at: str | None = None) -> int:
  env = dict(os.environ, OMP_NUM_THREADS="1")
  env.pop("PARAFLAX_CRASH_AT", None)
  if crash_at:
    env["PARAFLAX_CRASH_AT"] = crash_at
  return subprocess.run([sys.executable, "-m", "paraflax.cli", *argv],
                        env=env, cwd=ROOT, capture_output=True,
                        check=False).returncode


def _contents(folder: str) -> dict[str, bytes]:
  """The files of a selection folder; a SIGKILL may leave atomic writes'
  temporary files (`.tmp-*`), and the Task names hold the folder's path."""
  out = {p.name: p.read_bytes() for p in pathlib.Path(folder).iterdir()
         if not p.name.startswith(".tmp-")}
  summary = json.loads(out.pop("summary.json"))
  assert summary.pop("tasks")[0].endswith(":1")
  return {**out, "summary.json": json.dumps(summary).encode()}


def test_resume_after_kill_equals_uninterrupted(corpora, selected, tmp_path):
  output = str(tmp_path / "sel")
  argv = _argv(corpora, output)
  for moment in ("train_lm.estimated:2", "select.scored:3",
                 "select.binned:1", "atomic.renamed:4"):
    assert _run(argv, moment) == -9, moment
  assert _run(argv) == 0
  assert _contents(output) == _contents(selected)


def test_bins_are_seqio_tasks(selected, capsys):
  from paraflax.data import tasks  # pylint: disable=import-outside-toplevel
  rows = tasks.examples(f"selected:{selected}:1", "train")
  want = pathlib.Path(selected, "bin_1.de").read_text("utf-8").splitlines()
  assert [r["source"] for r in rows] == want
  assert cli.main(["tasks", "--select-dir", selected]) == 0
  assert f"selected:{os.path.abspath(selected)}:8" in capsys.readouterr().out
  with pytest.raises(errors.ConfigError, match="has bins 1, 2"):
    tasks.examples(f"selected:{selected}:9", "train")


def test_eval_domain_writes_the_curve(corpora, selected, tmp_path):
  from paraflax.evaluation import domain_selection  # pylint: disable=import-outside-toplevel
  config = config_lib.load(CONFIG, ["--config.eval_sizes=(20, 40, 80)"])
  rows = domain_selection.evaluate(selected, corpora["test"],
                                   str(tmp_path / "eval"), config)
  assert [(r["method"], r["size"]) for r in rows] == [
      (m, s) for m in domain_selection.METHODS for s in (20, 40, 80)]
  assert all(r["perplexity"] > 1 for r in rows)
  by = {(r["method"], r["size"]): r["perplexity"] for r in rows}
  assert by["moore_lewis", 20] < by["random", 20]  # biomedical test text
  for name in ("results.json", "results.md", "perplexity.png"):
    assert (tmp_path / "eval" / name).stat().st_size > 0
  written = json.loads((tmp_path / "eval" / "results.json").read_text())
  assert (written["select_dir"], written["test"]) == (selected,
                                                      corpora["test"])
  # The curve's LMs are eval_order-grams over the eval_min_count
  # vocabulary, whatever the selection's order and min_count.
  curve_lm = kenlm.Model(str(tmp_path / "eval" / "random_20.lm"))
  assert (kenlm.Model(os.path.join(selected, "in_domain.lm")).order,
          curve_lm.order) == (config.order, config.eval_order) == (2, 3)
  assert "<oov>" in curve_lm
  # eval_vocab_pad False: <unk> is one event for every vocabulary word an
  # LM never saw, so it weighs more than the padded LM's one word's share.
  unpadded = domain_selection.evaluate(
      selected, corpora["test"], str(tmp_path / "eval_nopad"),
      config_lib.load(CONFIG, ["--config.eval_sizes=(20,)",
                               "--config.eval_vocab_pad=False"]))
  assert "without lmplz --vocab_pad" in (
      tmp_path / "eval_nopad" / "results.md").read_text()
  assert unpadded[0]["perplexity"] != rows[0]["perplexity"]
  unk = {name: kenlm.Model(str(tmp_path / name / "moore_lewis_20.lm")).score(
      "zebroid", bos=False, eos=False) for name in ("eval", "eval_nopad")}
  assert unk["eval_nopad"] > unk["eval"]
  with pytest.raises(errors.ConfigError, match="give sizes from 1"):
    domain_selection.evaluate(
        selected, corpora["test"], str(tmp_path / "eval2"),
        config_lib.load(CONFIG, ["--config.eval_sizes=(10, 100000)"]))


def test_mixed_source_bins_carry_languages_for_pivot(corpora, tmp_path):
  # general.mul of domain-data: German and French rows of Multi30k val
  # (the same English), with general.langs beside it.
  from paraflax.domain import pivot  # pylint: disable=import-outside-toplevel
  de = pathlib.Path(corpora["src"]).read_text("utf-8").splitlines()
  fr = _gz_lines("multi30k_task1", "val.fr.gz")[:500]
  langs = ["fr" if i < 500 and i % 3 == 1 else "de" for i in range(len(de))]
  mixed = [fr[i] if l == "fr" else de[i] for i, l in enumerate(langs)]
  for ext, lines in (("mul", mixed), ("langs", langs)):
    (tmp_path / f"general.{ext}").write_text("\n".join(lines) + "\n", "utf-8")
  output = str(tmp_path / "sel")
  argv = ["select-domain", "--in-domain", corpora["in_domain"],
          "--general-src", str(tmp_path / "general.mul"), "--general-tgt",
          corpora["tgt"], "--src-lang", "mul", "--bins", "4",
          "--output", output, *SMALL]
  assert cli.main(argv) == 0
  table = _table(output)
  for b in range(1, 5):
    lines = [r[0] - 1 for r in table if r[4] == b]
    got = pathlib.Path(output, f"bin_{b}.langs").read_text("utf-8")
    assert got.splitlines() == [langs[i] for i in lines]
  found = pivot.resolve(f"selected:{output}:1")
  assert [b.lang for b in found] == ["de", "fr"]
  lines = [r[0] - 1 for r in table if r[4] == 1]
  tgt = pathlib.Path(corpora["tgt"]).read_text("utf-8").splitlines()
  for bitext in found:
    assert bitext.read() == [(mixed[i], tgt[i]) for i in lines
                             if langs[i] == bitext.lang]
  control = pivot.resolve(f"selected:{output}:r1")  # its random control
  assert sorted(b.lang for b in control) == ["de", "fr"]
  got = sorted(p for b in control for p in b.read())
  assert len(got) == len(lines) and got != sorted(
      (mixed[i], tgt[i]) for i in lines)
  pivoted = tmp_path / "bin1.txt"
  assert cli.main(["pivot", "--bitext", f"selected:{output}:1", "--output",
                   str(pivoted), "--max-phrase-len", "2"]) == 0
  summary = json.loads(pathlib.Path(f"{pivoted}.summary.json").read_text())
  assert sorted(summary["languages"]) == ["de", "fr"]


def test_mixed_source_without_languages(tmp_path, corpora, capsys):
  mixed = tmp_path / "general.mul"
  mixed.write_text(pathlib.Path(corpora["src"]).read_text("utf-8"), "utf-8")
  argv = ["select-domain", "--in-domain", corpora["in_domain"],
          "--general-src", str(mixed), "--general-tgt", corpora["tgt"],
          "--src-lang", "mul", "--output", str(tmp_path / "sel"), *SMALL]
  assert cli.main(argv) != 0
  assert "--general-langs" in capsys.readouterr().err
  (tmp_path / "general.langs").write_text("de\n" * 3, "utf-8")
  assert cli.main(argv) != 0
  assert "has 3 lines but the general bitext has 560" in (
      capsys.readouterr().err)
  assert not (tmp_path / "sel").exists()
