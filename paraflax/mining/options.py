"""How to mine (`paraflax mine`'s settings, `Options`), checked before any
work; the pipeline (`pipeline.py`) and the k-NN searches (`searches.py`)
both read them.
"""
from __future__ import annotations

import dataclasses
import math

from paraflax import choices
from paraflax import errors
from paraflax.mining import index_spec
from paraflax.mining import margin


@dataclasses.dataclass(frozen=True)
class Options:
  """How to mine; see `paraflax mine --help`."""
  k: int = 4
  margin: str = "ratio"
  retrieval: str = "max"
  threshold: float | None = None
  backend: str = "jax"
  block: int = 8192
  faiss_index: str = "flat"
  nlist: int | None = None
  nprobe: int = 16
  dedup: bool | None = None  # None: on when both sides have texts
  # A faiss factory string ("OPQ64,IVF65536,PQ64"): approximate search in
  # an index of each side (`index`); "Flat": the exact jax search.
  index: str | None = None
  metric: str = "ip"  # the index's: ip or l2, on unit vectors
  rerank: int = 16  # index candidates re-scored exactly; 0: none
  train_sample: int | None = None  # rows the index trains on; None: auto
  seed: int = 0  # draws that sample
  faiss_gpu: bool | None = None  # None: on GPUs when faiss has them
  # --index PQ<M>: its codes searched on the devices (`device_index`)
  index_on_devices: bool = False
  # jax: approximate top-k (`lax.approx_max_k`) at this recall; None: exact
  recall_target: float | None = None

  def __post_init__(self):
    """Refuses what no corpus could make sense of, before any work."""
    _check_choice(self.margin, margin.MARGINS, "--margin")
    _check_choice(self.retrieval, margin.STRATEGIES, "--retrieval")
    _check_choice(self.backend, choices.KNN_BACKENDS, "--backend")
    if self.block < 1:
      raise errors.ConfigError(f"--block {self.block}: use a positive size.")
    if self.threshold is not None and not math.isfinite(self.threshold):
      raise errors.ConfigError(
          f"--threshold {self.threshold}: use a finite score (or leave it "
          "out to keep every pair).")
    if self.index is not None:
      index_spec.Spec(self.index, self.metric, self.train_sample, self.seed)
      if self.backend != "jax":
        raise errors.ConfigError(
            f"--index with --backend {self.backend}: --index names the "
            "search itself (a faiss factory string, or Flat for the exact "
            "jax search); leave --backend out.")
    if self.index_on_devices:
      from paraflax.mining import device_index  # pylint: disable=g-import-not-at-top
      device_index.check_factory(self.faiss_string)
      if self.faiss_gpu:
        raise errors.ConfigError(
            "--index-on-devices with --faiss-gpu: the index is searched "
            "either on the devices (jax) or by faiss on its GPUs; choose "
            "one.")
    if self.rerank < 0:
      raise errors.ConfigError(f"--rerank {self.rerank}: use 0 (the "
                               "index's similarities) or a positive count.")
    if self.recall_target is not None:
      if not 0 < self.recall_target <= 1:
        raise errors.ConfigError(f"--recall-target {self.recall_target}: "
                                 "use a recall in (0, 1].")
      if self.backend != "jax" or self.faiss_string is not None:
        raise errors.ConfigError("--recall-target is for the jax search; "
                                 "a faiss index's recall follows --nprobe.")

  @property
  def faiss_string(self) -> str | None:
    """The faiss index to search; None: the jax (or --backend faiss)
    search."""
    return None if self.index in (None, index_spec.FLAT) else self.index

  @property
  def spec(self) -> index_spec.Spec:
    return index_spec.Spec(self.faiss_string, self.metric, self.train_sample,
                           self.seed)


def _check_choice(value: str, registry: dict, flag: str) -> None:
  if value not in registry:
    raise errors.ConfigError(f"{flag} {value!r}: use one of "
                             f"{sorted(registry)}.")
