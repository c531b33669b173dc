"""Fixtures that cut small samples of the real corpora into a temp folder."""
from __future__ import annotations

import gzip
import pathlib
from collections.abc import Callable

import pytest

from paraflax.data import paths
from paraflax.data import readers

Cutter = Callable[..., pathlib.Path]


@pytest.fixture
def sample_root(tmp_path: pathlib.Path) -> pathlib.Path:
  """A stand-in data folder; `cut` fills it with the files a test needs."""
  root = tmp_path / "data"
  root.mkdir()
  return root


@pytest.fixture
def cut(sample_root: pathlib.Path) -> Cutter:
  """`cut(rel, n, skip=None)` copies the first `n` lines of the real file
  `rel` (minus 1-based line `skip`) to the same place under `sample_root`,
  gzipped when the original is."""

  def _cut(rel: str, n: int, skip: int | None = None) -> pathlib.Path:
    lines, _ = readers.read_lines(paths.data_path(rel), empty="keep")
    kept = [l for i, l in enumerate(lines[:n], start=1) if i != skip]
    raw = "".join(l + "\n" for l in kept).encode("utf-8")
    out = sample_root / rel
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(gzip.compress(raw, mtime=0) if rel.endswith(".gz")
                    else raw)
    return out

  return _cut
