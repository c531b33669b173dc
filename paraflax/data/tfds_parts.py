"""A split of a prepared TFDS dataset as a corpus part (`tfds:` data specs,
`specs.py`): a part that reads itself, so that the catalogue (`corpora.py`)
reads it without importing tfds or the bundled builder (`tfds_builder.py`,
which reads the catalogue)."""
from __future__ import annotations

import dataclasses
import os

from paraflax import errors


@dataclasses.dataclass(frozen=True)
class Tfds:
  """A split of a prepared TFDS dataset ("name/config") of sentence pairs:
  features `source` and `target`, or two language codes, one of them en."""
  name: str
  split: str

  def rows(self) -> list[tuple]:
    """The split's (source, target) pairs, the bundled builder registered
    so that `parallel_text/...` loads too."""
    from paraflax import quiet  # pylint: disable=g-import-not-at-top
    quiet.tensorflow()
    import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
    from paraflax.data import tfds_builder  # pylint: disable=g-import-not-at-top,unused-import
    try:
      ds = tfds.load(self.name, split=self.split, download=False,
                     try_gcs=False,  # $TFDS_DATA_DIR as it is now
                     data_dir=os.environ.get("TFDS_DATA_DIR") or None)
    except Exception as e:  # tfds raises many kinds for a missing dataset
      raise errors.DataError(
          f"tfds:{self.name}:{self.split}: cannot be loaded ({e}). Prepare "
          "it first (tfds build, or the builder's download_and_prepare with "
          "a manual_dir), and set TFDS_DATA_DIR to its data_dir "
          "(docs/your-data.md).") from e
    keys = sorted(ds.element_spec)
    if {"source", "target"} <= set(keys):
      src, tgt = "source", "target"
    elif len(keys) == 2 and "en" in keys:
      src, tgt = [k for k in keys if k != "en"][0], "en"
    else:
      raise errors.DataError(
          f"tfds:{self.name}: features {keys}; paraflax reads sentence pairs "
          "(source and target, or two language codes, one of them en).")
    return [(ex[src].decode("utf-8"), ex[tgt].decode("utf-8"))
            for ex in tfds.as_numpy(ds)]
