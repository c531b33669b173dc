"""The notebooks in colabs/ run top to bottom, here with tiny models that
they train themselves, and show their tables and figures."""
import os
import re
import shlex
import sys

import nbclient
import nbformat
import pytest

import paraflax
from jupyter_client import manager

from paraflax import cli
from tests import test_domain_selection
from tests import test_sweep
from tests.conftest import BILINGUAL_TINY
from tests.conftest import ROOT
from tests.conftest import TINY
from tests.conftest import TINY_NMT

NOTEBOOK = ROOT / "colabs" / "mined_pairs.ipynb"
PARAPHRASES = ROOT / "colabs" / "paraphrases.ipynb"
FILTERING = ROOT / "colabs" / "filtering.ipynb"
DOMAIN = ROOT / "colabs" / "domain_paraphrases.ipynb"
STEPS = 8  # a multiple of TINY's megabatch
# The tiny models' data and sizes; the notebooks set the step intervals.
_INTERVALS = tuple(f"--config.{k}=" for k in
                   ("train_steps", "eval_every", "checkpoint.every",
                    "log_every"))


def _tiny(overrides) -> list[str]:
  return [o for o in overrides if not o.startswith(_INTERVALS)]


OVERRIDES = _tiny(BILINGUAL_TINY)
# Short decodes of 4 dev sentences: an untrained model runs to max_output.
NMT_OVERRIDES = _tiny(TINY_NMT) + ["--config.evals.dev.sentences=4",
                                   "--config.decode.max_output=20"]
GRAN_OVERRIDES = _tiny(TINY)


def _outputs(nb, kind: str) -> list:
  return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
          if kind in o.get("data", {})]


def _text(nb) -> str:
  return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                 for o in c.outputs if o.output_type == "stream")


def test_kernel_is_this_python():
  # jupyter_client runs a spec's `python` as sys.executable: the notebook
  # sees this venv's paraflax, not whatever python is on PATH.
  cmd = manager.KernelManager(kernel_name="python3").format_kernel_cmd()
  assert cmd[0] == sys.executable


@pytest.mark.parametrize(
    "path", sorted((ROOT / "colabs").glob("*.ipynb")), ids=lambda p: p.name)
def test_committed_without_outputs(path):
  nb = nbformat.read(path, as_version=4)
  nbformat.validate(nb)
  for cell in nb.cells:
    if cell.cell_type == "code":
      assert not cell.outputs and cell.execution_count is None


def _execute(nb, tmp_path, **settings) -> None:
  env = dict(os.environ, **settings)
  # One device, as a user's kernel has (conftest simulates 8 for the tests).
  env.pop("XLA_FLAGS", None)
  client = nbclient.NotebookClient(
      nb, kernel_name="python3", timeout=600,
      resources={"metadata": {"path": str(tmp_path)}})
  client.execute(env=env)  # raises CellExecutionError on any error


def _setup_cell(path) -> str:
  nb = nbformat.read(path, as_version=4)
  return next(c.source for c in nb.cells
              if c.cell_type == "code" and "fetch_data" in c.source)


def test_notebooks_share_the_setup_cell():
  # tests/test_download.py runs mined_pairs' setup cell without data.
  assert _setup_cell(PARAPHRASES) == _setup_cell(NOTEBOOK)


def test_runs_top_to_bottom(tmp_path):
  nb = nbformat.read(NOTEBOOK, as_version=4)
  _execute(nb, tmp_path,
           PARAFLAX_COLAB_WORKDIR=str(tmp_path / "w"),
           PARAFLAX_COLAB_TRAIN_STEPS=str(STEPS),
           PARAFLAX_COLAB_OVERRIDES=shlex.join(OVERRIDES),
           PARAFLAX_COLAB_GOLD="100", PARAFLAX_COLAB_DISTRACTORS="200")
  text = _text(nb)
  assert "holds no checkpoint: training a small model" in text
  assert f"at step {STEPS}" in text
  # On a CPU: Multi30k captions, where a small model can mine.
  assert "Mining benchmark from bitext_multi30k_de_en:validation" in text
  assert ("scale: 300 German and 300 English sentences, 100 gold pairs "
          "among 200 distractors a side") in text
  right = re.search(r"the best-scored 15: (\d+) correct, (\d+) wrong", text)
  assert right and int(right[1]) + int(right[2]) == 15
  tables = [o["data"]["text/html"] for o in _outputs(nb, "text/html")]
  assert len(tables) == 1 and tables[0].count("<tr>") == 16  # head + pairs
  assert tables[0].count("<td>correct \u2713</td>") == int(right[1])
  assert tables[0].count("<td>wrong</td>") == int(right[2])
  assert len(_outputs(nb, "image/png")) == 2  # histogram, P/R/F1 curves


def test_paraphrases_runs_top_to_bottom(tmp_path):
  nb = nbformat.read(PARAPHRASES, as_version=4)
  _execute(nb, tmp_path,
           PARAFLAX_COLAB_NMT_WORKDIR=str(tmp_path / "nmt"),
           PARAFLAX_COLAB_NMT_STEPS=str(STEPS),
           PARAFLAX_COLAB_NMT_OVERRIDES=shlex.join(NMT_OVERRIDES),
           PARAFLAX_COLAB_GRAN_WORKDIR=str(tmp_path / "gran"),
           PARAFLAX_COLAB_GRAN_STEPS=str(STEPS),
           PARAFLAX_COLAB_GRAN_OVERRIDES=shlex.join(GRAN_OVERRIDES),
           PARAFLAX_COLAB_CORPUS="100")
  text = _text(nb)
  assert text.count("holds no checkpoint: training a small model") == 2
  assert f"translator: {tmp_path / 'nmt'} at step {STEPS}" in text
  assert f"encoder: {tmp_path / 'gran'} at step {STEPS}" in text
  # The n-best table: a header and 3 ranked rows for each of the 3 pairs.
  assert "Back-translations (3-best, beam 5" in text
  assert text.count("rank    cost    score  translation") == 3
  assert text.count("] German:    ") == 3
  # rank, cost (NLL per subword, >= 0), score (a log-prob, <= 0).
  ranked = re.findall(r"^ {7}([1-3])  +(\d+\.\d{3})  +(-\d+\.\d{3})  ",
                      text, re.M)
  assert len(ranked) >= 3 and {r for r, _, _ in ranked} >= {"1"}
  assert "Nearest neighbours (cosine) among 100 Multi30k" in text
  assert text.count("cos(reference, best translation) = ") == 3
  # Each pair's reference (in both tables) and translation, K=3 neighbours.
  assert text.count("    reference: ") == 6
  assert text.count("    translation: ") == 3
  assert len(re.findall(r"^ {6}[1-3]\. -?\d\.\d{3}  ", text, re.M)) == 18
  assert len(_outputs(nb, "image/png")) == 1  # the bar chart


# test_sweep's scored pairs (a module fixture: made once here too).
scored = test_sweep.scored
# Two axes: data.filter (2 values) and seed (2 values), 3 of the 4 points.
_LENGTH, _OVERLAP = test_sweep.POINTS[:2]
SWEEP_POINTS = ((_LENGTH, "seed=0"), (_OVERLAP, "seed=0"), (_LENGTH, "seed=1"))


def test_filtering_runs_top_to_bottom(scored, tmp_path):
  config = test_sweep._write_sweep(tmp_path / "sweep.py", scored,  # pylint: disable=protected-access
                                   points=SWEEP_POINTS)
  workdir = tmp_path / "w"
  assert cli.main(["sweep", "--config", config, "--workdir",
                   str(workdir)]) == 0
  names = [r["name"] for r in paraflax.sweep_results(workdir)["points"]]
  assert len(names) == 3
  nb = nbformat.read(FILTERING, as_version=4)
  _execute(nb, tmp_path, PARAFLAX_SWEEP_DIR=str(workdir))
  text = _text(nb)
  assert f"{workdir}: base " in text and "3 of 3 points finished" in text
  assert "selected by sts/STSb.dev-tuning/pearson (dev)" in text
  assert "axes: data.filter (2 values), seed (2 values)" in text
  # The table: pandas' HTML where pandas is installed, else printed.
  tables = [o["data"]["text/html"] for o in _outputs(nb, "text/html")]
  shown = tables[0] if tables else text
  assert len(tables) <= 1 and "test/STSb.test/pearson" in shown
  table_rows = shown.split("<tr>" if tables else "\n")
  for name in names:  # each point's row, with its status
    assert [r for r in table_rows if name in r and "finished" in r], name
  # One bar chart per point, then one figure per axis.
  assert len(_outputs(nb, "image/png")) == 3


# test_domain_selection's corpora: 300 biomedical in-domain sentences, 560
# general pairs (Multi30k val de-en with 60 biomedical ones mixed in).
corpora = test_domain_selection.corpora


def _domain_runs(corpora, folder) -> dict[str, str]:
  """The notebook's inputs, as its "Making the runs" cell makes them, on
  the tiny corpora: 4 bins of 65 pairs; tables of bin 1 (top) and bin 4
  (bottom), reranked with 64-bit signatures of the in-domain text."""
  sel, curve = str(folder / "sel"), str(folder / "eval")
  small = list(test_domain_selection.SMALL)
  assert cli.main(["select-domain", "--in-domain", corpora["in_domain"],
                   "--general-src", corpora["src"], "--general-tgt",
                   corpora["tgt"], "--src-lang", "de", "--bins", "4",
                   "--output", sel, *small]) == 0
  assert cli.main(["eval-domain", "--select-dir", sel, "--test",
                   corpora["test"], "--output", curve,
                   "--config.eval_sizes=(20, 40, 80)"]) == 0
  reports, tables = [], []
  for label, number in (("top", 1), ("bottom", 4)):
    table = folder / f"{label}.txt"
    assert cli.main(["pivot", "--bitext", f"selected:{sel}:{number}",
                     "--output", str(table), "--max-phrase-len", "2"]) == 0
    assert cli.main(["monods", "--corpus", corpora["in_domain"], "--table",
                     str(table), "--bits", "64", "--output",
                     f"{table}.monods", "--config.mesh.num_devices=1"]) == 0
    assert cli.main(["eval-ppdb", "--table", f"{table}.monods", "--output",
                     str(folder / f"{label}.ppdb"), "--examples", "3",
                     "--coverage", corpora["test"]]) == 0
    reports.append(f"{label}={folder / label}.ppdb")
    tables.append(f"{label}={table}.monods")
  return {"PARAFLAX_DOMAIN_EVAL": curve,
          "PARAFLAX_PPDB_REPORTS": " ".join(reports),
          "PARAFLAX_TABLES": " ".join(tables)}


def test_domain_paraphrases_runs_top_to_bottom(corpora, tmp_path):
  settings = _domain_runs(corpora, tmp_path)
  top = tmp_path / "top.txt.monods"
  word = next(e.split(" ||| ")[0] for e in top.read_text("utf-8").splitlines()
              if e.split(" ||| ")[0].isalpha())
  best = paraflax.paraphrases(top, word, 5, by="p")
  assert best
  nb = nbformat.read(DOMAIN, as_version=4)
  _execute(nb, tmp_path, PARAFLAX_WORDS=f"{word}, qqqzzz", **settings)
  text = _text(nb)
  assert f"{tmp_path / 'eval'}: 60 test sentences" in text
  assert "top diffCE / random" in text
  for size in (20, 40, 80):  # one row per size of the curve
    assert re.search(rf"^ *{size}  ", text, re.M), size
  assert len(_outputs(nb, "image/png")) == 1  # the curve
  # Coverage: one row per table; agreement: one per table and ranking.
  assert len(re.findall(r"^ *(top|bottom)( +\d+\.\d){5}  +test.txt$", text,
                        re.M)) == 2
  for label in ("top", "bottom"):
    for ranking in ("score", "monods", "p"):
      assert re.search(rf"^ *{label} +{ranking} +\d+( +\d+\.\d){{2}}$",
                       text, re.M), (label, ranking)
  # Each report's example words, a line per ranking.
  assert len(re.findall(r"^ +(score|monods|p): ", text, re.M)) == 3 * 2 * 3
  # The typed word's pivot paraphrases beside the reranked ones, per table.
  assert "qqqzzz: not in this table" in text
  assert text.count("  1. pivot: ") == 2
  assert f"  1. pivot: {best[0][0]} ({best[0][1]:.3f})" in text
  assert text.count("MonoDS-reranked: ") >= len(best)
