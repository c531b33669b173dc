"""The corpora download, against a local HTTP server laid out as upstream
and serving the bundled files; and the notebook's setup cell that uses it."""
import functools
import gzip
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading

import pytest

import paraflax
from paraflax.data import download
from paraflax.data import paths
from tests.conftest import ROOT


def _text(path) -> bytes:
  data = path.read_bytes()
  return gzip.decompress(data) if path.suffix == ".gz" else data


@pytest.fixture(scope="module")
def mirror(tmp_path_factory):
  """http://127.0.0.1:PORT with multi30k/ and opus/ as upstream has them,
  made from the bundled data."""
  folder = tmp_path_factory.mktemp("mirror")
  for path in download.SHA256:
    source, name = download.remote(path)
    target = folder / source / name
    target.parent.mkdir(parents=True, exist_ok=True)
    bundled = paths.data_path(path)
    if source == "multi30k":  # upstream serves the .gz files
      shutil.copy(bundled, target)
    else:  # upstream serves plain text
      target.write_bytes(_text(bundled))
  handler = functools.partial(http.server.SimpleHTTPRequestHandler,
                              directory=str(folder))
  handler.log_message = lambda *args: None
  server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
  threading.Thread(target=server.serve_forever, daemon=True).start()
  yield f"http://127.0.0.1:{server.server_address[1]}", folder
  server.shutdown()


def test_fetch_gives_the_bundled_texts(mirror, tmp_path):
  url, _ = mirror
  root = paraflax.fetch_data(tmp_path / "data", mirror=url)
  for path in download.SHA256:
    assert _text(root / path) == _text(paths.data_path(path)), path
  before = {p: (root / p).stat().st_mtime_ns for p in download.SHA256}
  paraflax.fetch_data(root, mirror=url)  # all there: nothing downloaded
  assert before == {p: (root / p).stat().st_mtime_ns for p in download.SHA256}


def test_a_wrong_file_is_not_kept(mirror, tmp_path):
  url, folder = mirror
  path = "newstest_dev/newstest2012.deu"
  served = folder / "opus" / download.remote(path)[1]
  good = served.read_bytes()
  served.write_bytes(good + b"one more line\n")
  try:
    with pytest.raises(paraflax.DataError, match="sha256"):
      paraflax.fetch_data(tmp_path / "data", mirror=url)
  finally:
    served.write_bytes(good)
  assert not (tmp_path / "data" / path).exists()
  assert not list((tmp_path / "data").rglob("*.partial"))


def test_the_notebook_setup_cell_downloads_without_data(mirror, tmp_path):
  url, _ = mirror
  cells = json.loads((ROOT / "colabs" / "mined_pairs.ipynb").read_text(
      "utf-8"))["cells"]
  setup = next("".join(c["source"]) for c in cells if c["cell_type"] == "code"
               and "fetch_data" in "".join(c["source"]))
  env = {k: v for k, v in os.environ.items() if k != paths.ENV_VAR}
  env.update(PYTHONPATH=str(ROOT), PARAFLAX_COLAB_MIRROR=url,
             PARAFLAX_COLAB_DATA=str(tmp_path / "downloaded"))
  code = setup + "\nprint(os.environ['PARAFLAX_DATA_DIR'])"
  # cwd without ../shared/data, and a checkout copy with none beside it.
  work = tmp_path / "checkout" / "colabs"
  shutil.copytree(ROOT / "paraflax", tmp_path / "checkout" / "paraflax")
  work.mkdir()
  env["PYTHONPATH"] = str(tmp_path / "checkout")
  out = subprocess.run([sys.executable, "-c", code], cwd=work, env=env,
                       capture_output=True, text=True, timeout=120)
  assert out.returncode == 0, out.stderr
  assert out.stdout.strip().endswith("downloaded")
  for path in download.SHA256:
    assert (tmp_path / "downloaded" / path).exists()
