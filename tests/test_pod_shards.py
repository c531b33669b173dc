"""With data.parts = S, each process of a run reads, encodes and caches
only its own parts of the training pairs, and the global batches are
those of one process for any process count."""
import json
import pathlib
from collections.abc import Sequence

import numpy as np
import pytest

from paraflax import config as config_lib
from paraflax import errors
from paraflax.data import bitext
from paraflax.data import bitext_parts
from paraflax.recipes import bilingual
from paraflax.recipes import config_check
from paraflax.recipes import paraphrase
from paraflax.training import partitioning
from tests.conftest import BILINGUAL_CONFIG
from tests.conftest import BILINGUAL_TINY
from tests.conftest import ROOT
from tests.conftest import TINY
from tests.conftest import TINY_NMT
from tests import test_multihost

NMT = str(ROOT / "configs" / "nmt.py") + ":de"
PARTS = 4


def _config(*extra: str):
  return config_lib.load(NMT, (*TINY_NMT, f"--config.data.parts={PARTS}",
                               *extra))


def test_parts_split_the_rows_by_index_mod_the_parts():
  chunks = [[(f"s{i}", f"t{i}") for i in range(j, j + 5)]
            for j in range(0, 15, 5)]
  read = lambda: iter(chunks)  # noqa: E731
  got = [[p for c in bitext_parts.part_of(read, part, 4)() for p in c]
         for part in range(4)]
  assert got == [[(f"s{i}", f"t{i}") for i in range(part, 15, 4)]
                 for part in range(4)]


def _rows(read) -> list[tuple[str, str]]:
  return [p for chunk in read() for p in chunk]


def test_a_spec_of_enough_files_is_split_by_file(tmp_path):
  for k in range(5):
    (tmp_path / f"f{k}.tsv").write_text(
        "".join(f"de {k} {i}\ten {k} {i}\n" for i in range(3)))
  spec = f"tsv:{tmp_path}/*.tsv"
  files = [[(f"de {k} {i}", f"en {k} {i}") for i in range(3)]
           for k in range(5)]
  got = [_rows(bitext_parts.reader([spec], ("source", "target"), p, 4))
         for p in range(4)]
  assert got == [files[0] + files[4], files[1], files[2], files[3]]
  # Fewer files than parts: each part takes every 6th pair of the spec.
  whole = [p for f in files for p in f]
  got = [_rows(bitext_parts.reader([spec], ("source", "target"), p, 6))
         for p in range(6)]
  assert got == [whole[p::6] for p in range(6)]


def test_an_english_first_column_is_refused_before_any_part_is_read(
    tmp_path):
  (tmp_path / "x.tsv").write_text(
      "the man and the dog of the house\tder Mann und der Hund\n" * 40)
  config = _config(f"--config.data.train=('tsv:{tmp_path}/x.tsv',)")
  with pytest.raises(errors.ConfigError, match="does not look English"):
    bitext_parts.train_parts(config, str(tmp_path / "w"),
                             ("source", "target"), [], range(PARTS))
  assert not (tmp_path / "w" / "data_cache").exists()


def test_parts_must_split_over_processes_and_batches():
  assert list(bitext_parts.owned(8, (1, 4))) == [2, 3]
  with pytest.raises(errors.ConfigError, match="multiple of the 3"):
    bitext_parts.owned(4, (0, 3))
  with pytest.raises(errors.ConfigError, match="does not divide"):
    bitext_parts.count(_config("--config.batch_size=30"))
  with pytest.raises(errors.ConfigError, match="positive number"):
    bitext_parts.count(_config("--config.data.parts=0"))


def _global_batches(tmp: pathlib.Path, processes: int, steps: range
                    ) -> tuple[list[dict], list[set[str]]]:
  """The global batches of a run of `processes` processes, each with its
  own workdir (hosts that share no filesystem), and each workdir's
  encoded-cache folders."""
  config, blocks, folders = _config(), [], []
  for index in range(processes):
    workdir = tmp / f"p{processes}_{index}"
    stream, _, _ = bitext_parts.train_stream(
        config, str(workdir), ("source", "target"), [], 8,
        (index, processes))
    blocks.append([stream.get(step) for step in steps])
    folders.append({p.name for p in (workdir / "data_cache").iterdir()
                    if p.is_dir()})
  batches = [{key: np.concatenate([b[i][key] for b in blocks])
              for key in blocks[0][i]} for i in range(len(steps))]
  return batches, folders


def test_the_global_batches_are_those_of_one_process(tmp_path):
  steps = range(0, 400, 37)  # past the first epoch of each part
  one, one_folders = _global_batches(tmp_path, 1, steps)
  assert one_folders == [{f"bitext-part{p}of4" for p in range(PARTS)}]
  assert all(b["src"].shape == (32, 16) for b in one)  # max_len's width
  for processes in (2, 4):
    many, folders = _global_batches(tmp_path, processes, steps)
    per = PARTS // processes
    assert folders == [{f"bitext-part{p}of4"
                        for p in range(i * per, (i + 1) * per)}
                       for i in range(processes)]
    for got, want in zip(many, one):
      for key in want:
        np.testing.assert_array_equal(got[key], want[key])
  # Each process's cache holds its parts' rows only: a quarter each.
  rows = [json.loads((tmp_path / "p1_0" / "data_cache" /
                      f"bitext-part{p}of4" / "settings.json").read_text())
          for p in range(PARTS)]
  assert [r["settings"]["part"] for r in rows] == [[p, 4]
                                                    for p in range(PARTS)]
  assert sum(r["info"]["pairs"] for r in rows) == 29000
  assert {r["info"]["pairs"] for r in rows} == {7250}


def test_a_resumed_stream_gives_the_same_batches(tmp_path):
  stream, _, _ = bitext_parts.train_stream(
      _config(), str(tmp_path / "w"), ("source", "target"), [], 8, (0, 1))
  whole = [b for _, b in zip(range(6), stream.from_step(0))]
  stream.streams[0]._epoch.cache_clear()  # pylint: disable=protected-access
  resumed = [b for _, b in zip(range(3), stream.from_step(3))]
  for got, want in zip(resumed, whole[3:]):
    for key in want:
      np.testing.assert_array_equal(got[key], want[key])


def test_one_part_keeps_the_stream_of_the_whole_corpus():
  config = config_lib.load(NMT, TINY_NMT)
  assert bitext_parts.count(config) == 1
  stream = bitext.BucketStream(bitext.EncodedBitext(
      [np.ones(3, np.int32)] * 40, [np.ones(2, np.int32)] * 40), 8, seed=3)
  np.testing.assert_array_equal(
      stream._epoch(0)[0],  # pylint: disable=protected-access
      np.random.default_rng([3, 0]).permutation(40)[:40].astype(np.int32))


# model -> its flags with data.parts (a GRAN's batch_size: a multiple of 4)
_PARTED_RUNS = {"nmt": (), "bilingual": (),
                "gran": ("--config.batch_size=48",)}


def _parted_flags(model: str) -> tuple[str, list[str]]:
  config, flags = test_multihost.RUNS[model]
  return config, [*flags, *_PARTED_RUNS[model], f"--config.data.parts={PARTS}"]


@pytest.fixture(scope="module")
def one_process_run(tmp_path_factory):
  """1 process x 8 devices with data.parts=4 of a model: the reference
  run, once a model."""
  runs = {}

  def run(model: str) -> pathlib.Path:
    if model not in runs:
      config, flags = _parted_flags(model)
      one = tmp_path_factory.mktemp(f"one_parts_{model}") / "w"
      done = test_multihost.subprocess.run(
          [str(test_multihost.PARAFLAX), "train", "--config", config,
           "--workdir", str(one), *flags],
          env=test_multihost._env(8),  # pylint: disable=protected-access
          capture_output=True, text=True, timeout=600, check=False)
      assert done.returncode == 0, done.stderr[-3000:]
      runs[model] = one
    return runs[model]
  return run


@pytest.mark.slow  # a 1-process run, then a P-process one: ~2 min each
@pytest.mark.parametrize("model,processes", [
    ("nmt", 2), ("nmt", 4), ("bilingual", 2), ("gran", 2)])
def test_processes_train_as_one_process_on_their_own_parts(
    model, processes, one_process_run, tmp_path):
  config, flags = _parted_flags(model)
  one, two = one_process_run(model), tmp_path / "two"
  launched = test_multihost.subprocess.Popen(
      ["bash", str(test_multihost.LAUNCH), str(processes),
       str(8 // processes), config, str(two),
       *flags], env=test_multihost._env(),  # pylint: disable=protected-access
      stdout=test_multihost.subprocess.PIPE,
      stderr=test_multihost.subprocess.STDOUT, text=True)
  code, output = test_multihost._finish(launched, two)  # pylint: disable=protected-access
  assert code == 0, output
  test_multihost._assert_same_run(two, one)  # pylint: disable=protected-access
  logs = [(pathlib.Path(f"{two}.logs") / f"process_{i}.log").read_text()
          for i in range(processes)]
  for index, log in enumerate(logs):  # each encoded its own parts only
    for part in range(PARTS):
      assert (f"train part {part} of 4:" in log) == (
          part // (PARTS // processes) == index)


# The bilingual and paraphrase recipes read parts as the NMT one does: each
# process builds its recipe (`partitioning.process()` patched to its index
# and count) in a workdir of its own.
BILINGUAL = (*BILINGUAL_TINY, "--config.mesh.num_devices=8",
             f"--config.data.parts={PARTS}")
GRAN = str(ROOT / "configs" / "gran.py")
GRAN_PARTS = (*TINY, "--config.mesh.num_devices=8", "--config.batch_size=48",
              "--config.loss.scramble=0.3", f"--config.data.parts={PARTS}")


def _built(build, config, workdir: pathlib.Path, process: tuple[int, int],
           monkeypatch):
  monkeypatch.setattr(partitioning, "process", lambda: process)
  return build(config, str(workdir), partitioning.config_mesh(config))


def _recipes_blocks(build, config, tmp: pathlib.Path, processes: int,
                    steps: Sequence[int], axis: int, monkeypatch
                    ) -> tuple[list[dict], list[set[str]]]:
  """The global batches (each process's blocks joined on the batch
  `axis`) of steps `steps` of a run of `processes` processes, and each
  process's encoded-cache folders."""
  blocks, folders = [], []
  for index in range(processes):
    workdir = tmp / f"p{processes}_{index}"
    recipe = _built(build, config, workdir, (index, processes), monkeypatch)
    blocks.append([recipe.stream.get(step) for step in steps])
    folders.append({p.name for p in (workdir / "data_cache").iterdir()
                    if p.is_dir() and "part" in p.name})
  return [{key: np.concatenate([b[i][key] for b in blocks], axis=axis)
           for key in blocks[0][i]} for i in range(len(steps))], folders


def _assert_same(got: list[dict], want: list[dict]) -> None:
  for g, w in zip(got, want):
    assert g.keys() == w.keys()
    for key in w:
      np.testing.assert_array_equal(g[key], w[key], err_msg=key)


def test_bilingual_processes_read_their_parts_into_the_batches_of_one(
    tmp_path, monkeypatch):
  config = config_lib.load(BILINGUAL_CONFIG, BILINGUAL)
  steps = range(0, 2000, 211)  # past the first epoch of each part
  one, folders = _recipes_blocks(bilingual.build, config, tmp_path, 1, steps,
                                 0, monkeypatch)
  assert folders == [{f"bitext-part{p}of4" for p in range(PARTS)}]
  assert all(b["src"].shape == b["ae_in"].shape == (16, 16) for b in one)
  # Each batch autoencodes its own targets, as with data.parts = 1.
  assert all((b["ae_out"] == b["tgt_out"]).all() for b in one)
  many, folders = _recipes_blocks(bilingual.build, config, tmp_path, 2,
                                  steps, 0, monkeypatch)
  assert folders == [{"bitext-part0of4", "bitext-part1of4"},
                     {"bitext-part2of4", "bitext-part3of4"}]
  _assert_same(many, one)
  rows = [json.loads((tmp_path / "p2_1" / "data_cache" / f"bitext-part{p}of4"
                      / "settings.json").read_text())["info"]["pairs"]
          for p in (2, 3)]
  assert rows == [7250, 7250]  # a quarter of the 29,000 pairs each


def test_bilingual_parts_split_the_monolingual_text_too(tmp_path,
                                                        monkeypatch):
  """data.mono_tasks with data.parts: each part autoencodes its targets and
  its part of the monolingual text, each process encoding its own."""
  config = config_lib.load(BILINGUAL_CONFIG, (
      *BILINGUAL, "--config.data.mono_tasks=('mono_en_abc_rural',)"))
  steps = range(0, 600, 97)
  one, folders = _recipes_blocks(bilingual.build, config, tmp_path, 1, steps,
                                 0, monkeypatch)
  assert folders == [{f"{kind}-part{p}of4" for p in range(PARTS)
                      for kind in ("bitext", "mono")}]
  # The monolingual lines are autoencoded, not only the batch's targets.
  assert sum((b["ae_out"] != b["tgt_out"]).any() for b in one) > len(one) / 2
  many, folders = _recipes_blocks(bilingual.build, config, tmp_path, 2,
                                  steps, 0, monkeypatch)
  assert folders == [{f"{kind}-part{p}of4" for p in parts
                      for kind in ("bitext", "mono")}
                     for parts in ((0, 1), (2, 3))]
  _assert_same(many, one)
  rows = [json.loads((tmp_path / "p1_0" / "data_cache" / f"mono-part{p}of4"
                      / "settings.json").read_text())["info"]["pairs"]
          for p in range(PARTS)]
  assert max(rows) - min(rows) <= 1 and sum(rows) > 4 * 2000


def test_paraphrase_processes_read_their_parts_into_the_megabatches_of_one(
    tmp_path, monkeypatch):
  config = config_lib.load(GRAN, GRAN_PARTS)
  steps = range(0, 40, 4)  # megabatches 0-9, past each part's first pass
  one, folders = _recipes_blocks(paraphrase.build, config, tmp_path, 1,
                                 steps, 1, monkeypatch)
  assert folders == [{f"pairs-part{p}of4" for p in range(PARTS)}]
  assert all(b["a"].shape == (4, 48, 24) for b in one)  # max_len's width
  for processes in (2, 4):
    many, folders = _recipes_blocks(paraphrase.build, config, tmp_path,
                                    processes, steps, 1, monkeypatch)
    per = PARTS // processes
    assert folders == [{f"pairs-part{p}of4"
                        for p in range(i * per, (i + 1) * per)}
                       for i in range(processes)]
    _assert_same(many, one)
  # Every process counted the same vocabulary, on part 0.
  vocabs = {(tmp_path / f"p4_{i}" / "vocab.txt").read_text()
            for i in range(4)}
  assert len(vocabs) == 1
  rows = [json.loads((tmp_path / "p4_3" / "data_cache" / "pairs-part3of4"
                      / "settings.json").read_text())["info"]["sizes"]]
  assert rows == [{"0": 1448 // 4}]


def test_paraphrase_parts_mix_tasks_by_rate_in_each_part(tmp_path,
                                                          monkeypatch):
  config = config_lib.load(GRAN, (*GRAN_PARTS, "--config.data.mixture=("
                                  "('paraphrase_en_generaltest2022_cs', 3),"
                                  "('paraphrase_en_generaltest2022_de', 1))",
                                  "--config.data.task="))
  steps = range(0, 24, 4)
  one, _ = _recipes_blocks(paraphrase.build, config, tmp_path, 1, steps, 1,
                           monkeypatch)
  many, _ = _recipes_blocks(paraphrase.build, config, tmp_path, 2, steps, 1,
                            monkeypatch)
  _assert_same(many, one)


def test_resumed_parted_streams_give_the_same_batches(tmp_path, monkeypatch):
  for build, config, start, count in (
      (bilingual.build, config_lib.load(BILINGUAL_CONFIG, BILINGUAL), 3, 3),
      (paraphrase.build, config_lib.load(GRAN, GRAN_PARTS), 8, 2)):
    workdir = tmp_path / config.recipe
    stream = _built(build, config, workdir, (1, 2), monkeypatch).stream
    whole = [b for _, b in zip(range(start + count), stream.from_step(0))]
    # A rerun after a kill: a new process, the workdir's caches and models.
    stream = _built(build, config, workdir, (1, 2), monkeypatch).stream
    _assert_same([b for _, b in zip(range(count), stream.from_step(
        start * (config.get("megabatch", 1))))], whole[start:])


def test_parts_refuse_data_they_do_not_split(tmp_path):
  """The config's check refuses seqio's cache of a Task, before the
  workdir is touched."""
  config = config_lib.load(GRAN, (
      *GRAN_PARTS, "--config.data.cache_dir=/tmp/seqio_cache"))
  with pytest.raises(errors.ConfigError, match=(
      r"data.parts=4 with data.cache_dir=.*--config.data.cache_dir=.* or "
      r"set --config.data.parts=1")):
    config_check.check(config, str(tmp_path / "w"))
  assert not (tmp_path / "w").exists()
