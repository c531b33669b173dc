"""TFDS builder for the shared bitext, read from a local folder (no download).

  builder = ParallelText(config="multi30k_de_en", data_dir=tfds_dir)
  builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
      manual_dir=paths.data_dir()))
  ds = tfds.load("parallel_text/multi30k_de_en", split="validation",
                 data_dir=tfds_dir, download=False, try_gcs=False)

One config per bitext corpus and language pair of `corpora.BITEXT_CORPORA`,
named like its seqio Task without the `bitext_` prefix.
"""
from __future__ import annotations

import pathlib
from collections.abc import Iterator

from paraflax import quiet
from paraflax.data import corpora

quiet.tensorflow()
# tfds loads TensorFlow: only after the quiet load above.
import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top,wrong-import-position

_PREFIX = "bitext_"


def _config(corpus: corpora.Corpus) -> tfds.core.BuilderConfig:
  src, tgt = corpus.pair
  return tfds.core.BuilderConfig(
      name=corpus.name.removeprefix(_PREFIX),
      description=(f"{corpus.name}: {src}-{tgt}, splits "
                   f"{', '.join(corpus.splits)}"))


class ParallelText(tfds.core.GeneratorBasedBuilder):
  """Sentence-aligned bitext: `source` (non-English) and `target` (English)."""

  VERSION = tfds.core.Version("1.0.0")
  BUILDER_CONFIGS = [_config(c) for c in corpora.BITEXT_CORPORA]
  MANUAL_DOWNLOAD_INSTRUCTIONS = (
      "Nothing is downloaded. Point manual_dir at the shared corpora folder "
      "(the value of PARAFLAX_DATA_DIR, e.g. ../shared/data) through "
      "tfds.download.DownloadConfig(manual_dir=...).")

  @property
  def _corpus(self) -> corpora.Corpus:
    return corpora.get(_PREFIX + self.builder_config.name)

  def _info(self) -> tfds.core.DatasetInfo:
    # DatasetInfo(builder=self) rather than dataset_info_from_configs(): the
    # latter looks for metadata files beside a packaged builder.
    return tfds.core.DatasetInfo(
        builder=self,
        description=self.builder_config.description,
        features=tfds.features.FeaturesDict({
            "source": tfds.features.Text(),
            "target": tfds.features.Text(),
        }),
        supervised_keys=("source", "target"),
        # Keep file order, so example i is line i (alignment-recovery dev
        # sets depend on it); shuffle at load time instead.
        disable_shuffling=True)

  def _split_generators(self, dl_manager: tfds.download.DownloadManager
                        ) -> dict[str, Iterator[tuple[int, dict[str, str]]]]:
    root = pathlib.Path(dl_manager.manual_dir)
    return {split: self._generate_examples(root, split)
            for split in self._corpus.splits}

  def _generate_examples(self, root: pathlib.Path, split: str
                         ) -> Iterator[tuple[int, dict[str, str]]]:
    columns = corpora.read(self._corpus, split, root)
    for key, (source, target) in enumerate(
        zip(columns["source"], columns["target"])):
      yield key, {"source": source, "target": target}
