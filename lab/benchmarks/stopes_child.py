"""The margin step of stopes (facebookresearch/stopes, LASER's mining code)
on a peer's k-NN results: run by `mining_scale.py --stopes-python PY` with
the python of a venv where `pip install stopes` (and the packages its
mining module imports: numpy, torch, scipy, scikit-learn, transformers)
succeeded. Not imported by paraflax or by .venv's scripts.

  PY lab/benchmarks/stopes_child.py FOLDER K

Where the speech module stopes' mining utils import at the top (for
blended retrieval only: torchaudio, librosa) does not import, a stand-in
that fails if called takes its place, and the JSON says why.

FOLDER holds x2y.dist.npy, x2y.idx.npy, y2x.dist.npy, y2x.idx.npy: float32
squared L2 distances of unit rows (2 - 2 cos) and uint32 ids, [N, K], the
nearest first, as stopes' calculate_distances writes them. Runs
`stopes.modules.bitext.mining.mine_bitext_indexes_utils.mine` with the
settings of stopes' mine_indexes/base.yaml (k_extract 1, ratio margin,
margin_norm mean, union, sort_neighbors False) but K neighbours a side and
no threshold (every candidate, so that P/R/F1 can be read at any one);
writes FOLDER/stopes.npz (scores, src_idx, trg_idx) and prints its times
as JSON.
"""
from __future__ import annotations

import json
import logging
import os
import resource
import sys
import time


def _import_audio_comparator() -> str | None:
  """Imports the module stopes' mining utils import for blended retrieval
  (speech: torch, torchaudio, librosa, transformers); where it cannot be
  imported, puts a stand-in for it that fails if called, and says why.
  `mine` calls it only given auxiliary embeddings, which is not done
  here: the margin, fastmax and extraction run are stopes' own code."""
  try:
    import stopes.eval.auto_pcp.audio_comparator  # pylint: disable=g-import-not-at-top,unused-import
    return None
  except Exception as e:  # pylint: disable=broad-except
    # The library's path inside the peer's venv is this machine's: the
    # result keeps the error with the venv's prefix left out.
    why = f"{type(e).__name__}: {e}".splitlines()[0].replace(
        sys.prefix + os.sep, "")
  import types  # pylint: disable=g-import-not-at-top

  def unavailable(*args, **kwargs):
    raise RuntimeError(f"stopes' audio comparator did not import: {why}")
  stand_in = types.ModuleType("stopes.eval.auto_pcp.audio_comparator")
  stand_in.Comparator = type("Comparator", (), {"load": unavailable})
  stand_in.get_model_pred = unavailable
  sys.modules[stand_in.__name__] = stand_in
  return why


def _peak_rss_kib() -> int:
  """VmHWM: the peak of this process's own memory map (ru_maxrss on Linux
  also counts the parent's at the fork)."""
  with open("/proc/self/status", encoding="utf-8") as f:
    for line in f:
      if line.startswith("VmHWM:"):
        return int(line.split()[1])
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main() -> None:
  folder, k = sys.argv[1], int(sys.argv[2])
  t = time.perf_counter()
  import numpy as np  # pylint: disable=g-import-not-at-top
  stubbed = _import_audio_comparator()
  from stopes.modules.bitext.mining import mine_bitext_indexes_utils as utils  # pylint: disable=g-import-not-at-top
  import_s = time.perf_counter() - t
  path = lambda name: os.path.join(folder, name)
  # Below every ratio margin of unit rows with positive neighbourhoods;
  # stopes logs counts around it, so a finite number, not -inf.
  threshold = -10.0
  t = time.perf_counter()
  scores, src, tgt, _ = utils.mine(
      [path("x2y.dist.npy")], [path("y2x.dist.npy")],
      [path("x2y.idx.npy")], [path("y2x.idx.npy")],
      k, k, 1, threshold, False, "ratio", "union", False,
      logging.getLogger("stopes"))
  mine_s = time.perf_counter() - t
  np.savez(path("stopes.npz"), scores=scores, src_idx=src, trg_idx=tgt)
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  print(json.dumps({
      "import_s": import_s, "mine_s": mine_s, "threshold": threshold,
      "settings": {"k_src": k, "k_trg": k, "k_extract": 1,
                   "margin_type": "ratio", "margin_norm": "mean",
                   "mine_type": "union", "sort_neighbors": False},
      "pairs_with_repeats": int(len(scores)),
      "audio_comparator_stood_in_for": stubbed,
      "peak_rss_mib": _peak_rss_kib() / 1024, "peak_rss_measure": "VmHWM",
      "versions": {n: metadata.version(n) for n in ("stopes", "numpy",
                                                    "torch")}}))


if __name__ == "__main__":
  main()
