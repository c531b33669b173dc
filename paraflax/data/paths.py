"""Where the corpora live: one setting, `PARAFLAX_DATA_DIR`."""
from __future__ import annotations

import os
import pathlib

ENV_VAR = "PARAFLAX_DATA_DIR"
_DEFAULT = pathlib.Path("..") / "shared" / "data"


def data_dir() -> pathlib.Path:
  """`$PARAFLAX_DATA_DIR`, else `../shared/data` beside the checkout.

  The default is tried relative to the working directory first and then to the
  repository root, so commands work from either place.
  """
  if os.environ.get(ENV_VAR):
    return pathlib.Path(os.environ[ENV_VAR]).expanduser()
  if _DEFAULT.is_dir():
    return _DEFAULT.resolve()
  return (pathlib.Path(__file__).resolve().parents[2] / _DEFAULT).resolve()


def data_path(*parts: str) -> pathlib.Path:
  return data_dir().joinpath(*parts)
