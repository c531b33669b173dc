"""colabs/mined_pairs.ipynb runs top to bottom, here with a tiny model that
it trains itself, and shows its table and figures."""
import os
import shlex
import sys

import nbclient
import nbformat
from jupyter_client import manager

from tests.conftest import BILINGUAL_TINY
from tests.conftest import ROOT

NOTEBOOK = ROOT / "colabs" / "mined_pairs.ipynb"
STEPS = 8
# The tiny model's data and size; the notebook sets the step intervals.
_INTERVALS = tuple(f"--config.{k}=" for k in
                   ("train_steps", "eval_every", "checkpoint.every",
                    "log_every"))
OVERRIDES = [o for o in BILINGUAL_TINY if not o.startswith(_INTERVALS)]


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


def test_committed_without_outputs():
  nb = nbformat.read(NOTEBOOK, as_version=4)
  nbformat.validate(nb)
  for cell in nb.cells:
    if cell.cell_type == "code":
      assert not cell.outputs and cell.execution_count is None


def test_runs_top_to_bottom(tmp_path):
  nb = nbformat.read(NOTEBOOK, as_version=4)
  env = dict(os.environ,
             PARAFLAX_COLAB_WORKDIR=str(tmp_path / "w"),
             PARAFLAX_COLAB_TRAIN_STEPS=str(STEPS),
             PARAFLAX_COLAB_OVERRIDES=shlex.join(OVERRIDES),
             PARAFLAX_COLAB_GOLD="100", PARAFLAX_COLAB_DISTRACTORS="200")
  # One device, as a user's kernel has (conftest simulates 8 for the tests).
  env.pop("XLA_FLAGS", None)
  client = nbclient.NotebookClient(
      nb, kernel_name="python3", timeout=600,
      resources={"metadata": {"path": str(tmp_path)}})
  client.execute(env=env)  # raises CellExecutionError on any error
  text = _text(nb)
  assert "holds no checkpoint: training a small model" in text
  assert f"at step {STEPS}" in text
  tables = [o["data"]["text/html"] for o in _outputs(nb, "text/html")]
  assert len(tables) == 1 and tables[0].count("<tr>") > 5  # head + pairs
  assert len(_outputs(nb, "image/png")) == 2  # histogram, P/R/F1 curves
