"""`paraflax index` and `paraflax mine --index` over sharded embeddings: an
index killed and resumed equals one built straight; `Flat` is today's exact
mining; shards in any order give the same TSV; bad input stops before
anything is written."""
import json
import os
import pathlib
import subprocess
import sys
import types

import numpy as np
import pytest

import paraflax.recipes
from paraflax import cli
from paraflax.mining import embeddings_io
from paraflax.mining import index_search
from paraflax.mining import index_spec

N, DIM, SHARDS = 300, 16, 3
# IVF with few lists, so that small corpora train in well under a second.
IVF = "IVF4,SQ8"


def _vectors(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
  """y: noisy copies of x's first half, then unrelated rows."""
  rng = np.random.default_rng(seed)
  x = rng.normal(size=(N, DIM)).astype(np.float32)
  half = N // 2
  y = np.concatenate([x[:half] + 0.1 * rng.normal(size=(half, DIM)),
                      rng.normal(size=(N - half, DIM))]).astype(np.float32)
  return x, y


def _write(folder: pathlib.Path, name: str, matrix: np.ndarray,
           texts: list[str] | None = None, shards: int = SHARDS,
           fp16: bool = True) -> str:
  """Shards name-0..; returns their glob."""
  per = -(-len(matrix) // shards)
  for i in range(shards):
    ext = "f16" if fp16 else "f32"
    embeddings_io.write(str(folder / f"{name}-{i}.{ext}"),
                        matrix[i * per:(i + 1) * per], fp16=fp16)
    if texts is not None:
      (folder / f"{name}-{i}.txt").write_text(
          "".join(t + "\n" for t in texts[i * per:(i + 1) * per]),
          encoding="utf-8")
  return str(folder / f"{name}-*.{'f16' if fp16 else 'f32'}")


@pytest.fixture
def shards(tmp_path):
  x, y = _vectors()
  # Some sentences repeat, across shards too.
  xt = [f"x {i % 280}" for i in range(N)]
  yt = [f"y {i % 290}" for i in range(N)]
  return {"x": _write(tmp_path, "x", x, xt), "y": _write(tmp_path, "y", y, yt),
          "xt": str(tmp_path / "x-*.txt"), "yt": str(tmp_path / "y-*.txt"),
          "tmp": tmp_path, "x_arr": x, "y_arr": y}


def _mine(s, out, *extra, texts=True):
  args = ["mine", "--src-emb", s["x"], "--tgt-emb", s["y"], "--fp16",
          "--block", "256", "--output", str(out), *extra]
  if texts:
    args += ["--src-text", s["xt"], "--tgt-text", s["yt"]]
  return cli.main(args)


def test_flat_through_the_index_path_is_exact_mining(shards):
  out = shards["tmp"]
  assert _mine(shards, out / "exact.tsv") == 0
  assert _mine(shards, out / "flat.tsv", "--index", "Flat") == 0
  exact = (out / "exact.tsv").read_bytes()
  assert exact and (out / "flat.tsv").read_bytes() == exact


def test_shards_mine_as_one_file(shards, tmp_path):
  x, y = shards["x_arr"], shards["y_arr"]
  one = tmp_path / "one"
  one.mkdir()
  embeddings_io.write(str(one / "x.f16"), x, fp16=True)
  embeddings_io.write(str(one / "y.f16"), y, fp16=True)
  assert cli.main(["mine", "--src-emb", str(one / "x.f16"), "--tgt-emb",
                   str(one / "y.f16"), "--fp16", "--block", "256",
                   "--output", str(one / "out.tsv")]) == 0
  assert _mine(shards, tmp_path / "sharded.tsv", texts=False) == 0
  assert ((tmp_path / "sharded.tsv").read_bytes()
          == (one / "out.tsv").read_bytes())


def test_shards_in_any_order_give_the_same_tsv(shards, tmp_path):
  assert _mine(shards, tmp_path / "glob.tsv", "--index", IVF) == 0
  listed = dict(shards)
  for side, ext in (("x", "f16"), ("y", "f16"), ("xt", "txt"),
                    ("yt", "txt")):
    paths = sorted(tmp_path.glob(f"{side[0]}-*.{ext}"))
    listed[side] = ",".join(str(p) for p in (paths[2], paths[0], paths[1]))
  assert _mine(listed, tmp_path / "listed.tsv", "--index", IVF) == 0
  assert ((tmp_path / "listed.tsv").read_bytes()
          == (tmp_path / "glob.tsv").read_bytes())


def test_shards_gather_rows_as_the_whole_matrix_would(tmp_path):
  """Rows gathered in any order, repeated, from every shard or from one,
  in any shape, are the whole matrix's rows there; so are those of one
  file and of a subset of its rows, as the index path reads them."""
  x, _ = _vectors()
  whole = x.astype(np.float16)
  sharded, _ = embeddings_io.read_shards(_write(tmp_path, "x", x, shards=4),
                                         DIM, fp16=True)
  assert isinstance(sharded, embeddings_io.Shards)
  one, _ = embeddings_io.read_shards(_write(tmp_path, "one", x, shards=1),
                                     DIM, fp16=True)
  subset = np.arange(N)[::-2]
  for at in (np.random.default_rng(1).integers(0, N // 2, (50, 7)),
             np.array([N // 2 - 1, 0, 0, 76, 75, 1]), np.array([80, 81]),
             np.zeros(0, np.int64)):
    for rows in (sharded, index_search.Rows(sharded, None),
                 index_search.Rows(one, None)):
      np.testing.assert_array_equal(rows[at], whole[at])
    for emb in (sharded, one):
      np.testing.assert_array_equal(
          index_search.Rows(emb, subset)[at], whole[subset[at]])
  np.testing.assert_array_equal(index_search.Rows(one, subset)[3:6],
                                whole[subset[3:6]])


def test_candidates_scored_again_in_threaded_chunks_equal_one_pass(
    tmp_path, monkeypatch):
  """The chunks, spread over threads, give the cosines of the whole block
  scored at once, bit for bit."""
  x, y = _vectors()
  corpus = index_search.Rows(embeddings_io.read_shards(
      _write(tmp_path, "x", x), DIM, fp16=True)[0], None)
  q = index_spec.unit(y)
  ids = np.random.default_rng(2).integers(0, N, (N, 16))
  whole = np.einsum("qd,qkd->qk", q, index_spec.unit(
      corpus[ids.ravel()]).reshape(N, 16, DIM))
  monkeypatch.setattr(index_search, "_RESCORE_QUERIES", 7)  # 43 chunks
  for threads in (1, 2):
    cos = index_search.exact_cosines(q, corpus, ids, threads)
    assert cos.dtype == np.float32
    np.testing.assert_array_equal(cos, whole)


def test_ivf_finds_the_planted_pairs(shards, tmp_path):
  assert _mine(shards, tmp_path / "ivf.tsv", "--index", IVF, texts=False) == 0
  pairs = {tuple(map(int, line.split("\t")[1:])) for line in
           (tmp_path / "ivf.tsv").read_text().splitlines()}
  assert len({(i, i) for i in range(N // 2)} & pairs) >= 0.97 * (N // 2)


def _index(s, folder, *extra):
  index = [] if "--index" in extra else ["--index", IVF]
  return cli.main(["index", "--emb", s["x"], "--fp16", *index,
                   "--output", str(folder), *extra])


@pytest.mark.parametrize("string, parts", [
    (IVF, ["part-000000.faiss", "part-000001.faiss"]),
    # Fast-scan lists are not merged: the index of the first shards is kept.
    ("IVF4,PQ4x4fs", ["upto-000002.faiss"])])
def test_an_index_killed_and_resumed_equals_one_built_straight(
    shards, tmp_path, string, parts):
  straight, resumed = tmp_path / "straight", tmp_path / "resumed"
  assert _index(shards, straight, "--index", string) == 0
  code = ("import sys; from paraflax import cli; "
          "sys.exit(cli.main(sys.argv[1:]))")
  killed = subprocess.run(
      [sys.executable, "-c", code, "index", "--emb", shards["x"], "--fp16",
       "--index", string, "--output", str(resumed)],
      env={**os.environ, "PARAFLAX_CRASH_AT": "index.part:2"},
      capture_output=True, check=False)
  assert killed.returncode == -9, killed.stderr.decode()[-2000:]
  assert sorted(p.name for p in (resumed / "parts").iterdir()) == parts
  assert not (resumed / "index.faiss").exists()
  assert _index(shards, resumed, "--index", string) == 0
  assert ((resumed / "index.faiss").read_bytes()
          == (straight / "index.faiss").read_bytes())
  assert not (resumed / "parts").exists()


def test_a_built_index_is_reused_by_mine(shards, tmp_path, capsys):
  folder = tmp_path / "xi"
  assert _index(shards, folder, "--text", shards["xt"]) == 0
  built = (folder / "index.faiss").stat().st_mtime_ns
  capsys.readouterr()
  assert _mine(shards, tmp_path / "a.tsv", "--index", IVF, "--src-index",
               str(folder)) == 0
  assert (folder / "index.faiss").stat().st_mtime_ns == built
  assert f"{folder}: training" not in capsys.readouterr().err


def _refused(capsys, tmp_path, args, *words):
  before = set(tmp_path.rglob("*"))
  assert cli.main(args) != 0
  err = capsys.readouterr().err
  for word in words:
    assert word in err, err
  assert set(tmp_path.rglob("*")) == before  # nothing written


def test_an_index_of_another_dimension_or_metric_is_refused(shards, tmp_path,
                                                            capsys):
  other = tmp_path / "other"
  other.mkdir()
  _write(other, "x", np.random.default_rng(1).normal(
      size=(N, 8)).astype(np.float32))
  folder = tmp_path / "xi"
  assert cli.main(["index", "--emb", str(other / "x-*.f16"), "--fp16",
                   "--index", IVF, "--output", str(folder)]) == 0
  args = ["mine", "--src-emb", shards["x"], "--tgt-emb", shards["y"],
          "--fp16", "--index", IVF, "--src-index", str(folder), "--output",
          str(tmp_path / "out.tsv")]
  _refused(capsys, tmp_path, args, "the embedding dimension (8 there, 16 "
           "here)")
  ip = tmp_path / "ip"
  assert _index(shards, ip) == 0
  _refused(capsys, tmp_path, args[:-4] + ["--src-index", str(ip), "--metric",
                                          "l2", "--output",
                                          str(tmp_path / "out.tsv")],
           'the metric ("ip" there, "l2" here)')
  _refused(capsys, tmp_path, ["index", "--emb", shards["x"], "--fp16",
                              "--index", IVF, "--metric", "l2", "--output",
                              str(ip)], "the metric")


def test_shards_of_mixed_dimension_are_refused(shards, tmp_path, capsys):
  embeddings_io.write(str(tmp_path / "x-9.f16"),
                      np.ones((4, 8), np.float32), fp16=True)
  _refused(capsys, tmp_path,
           ["mine", "--src-emb", shards["x"], "--tgt-emb", shards["y"],
            "--fp16", "--output", str(tmp_path / "out.tsv")],
           "x-9.f16 holds embeddings of dim 8", "dim 16")


def test_fp16_on_float32_files_is_refused(tmp_path, capsys):
  x, y = _vectors()
  xs, ys = (_write(tmp_path, n, m, fp16=False) for n, m in (("x", x),
                                                            ("y", y)))
  _refused(capsys, tmp_path,
           ["mine", "--src-emb", xs, "--tgt-emb", ys, "--fp16", "--index",
            IVF, "--output", str(tmp_path / "out.tsv")],
           "holds float32", "drop --fp16")


def test_bad_index_strings_are_refused(shards, tmp_path, capsys):
  _refused(capsys, tmp_path, ["index", "--emb", shards["x"], "--fp16",
                              "--index", "IVF8,PQ5", "--output",
                              str(tmp_path / "i")], "faiss cannot build it")
  _refused(capsys, tmp_path, ["index", "--emb", shards["x"], "--fp16",
                              "--index", "HNSW16", "--output",
                              str(tmp_path / "i")], "shard by shard")


def test_pq_codes_on_the_devices_rank_their_decoded_rows_exactly():
  """8 devices, each a shard of the codes: the ranking of exact cosine
  search over the decoded rows (`knn`), cosines included."""
  import faiss  # pylint: disable=g-import-not-at-top
  from paraflax.mining import device_index  # pylint: disable=g-import-not-at-top
  from paraflax.mining import index_spec  # pylint: disable=g-import-not-at-top
  from paraflax.mining import knn  # pylint: disable=g-import-not-at-top
  x, y = (index_spec.unit(v) for v in _vectors())
  index = faiss.index_factory(DIM, "PQ4", faiss.METRIC_INNER_PRODUCT)
  index.train(x)
  index.add(x)
  searched = device_index.DeviceIndex(index, "ip", block=64)
  sims, ids = searched.search(y, 5)
  decoded = index.pq.decode(
      faiss.vector_to_array(index.codes).reshape(N, 4))
  want_sims, want_ids = knn.knn(y, decoded, 5)
  np.testing.assert_array_equal(ids, want_ids)
  np.testing.assert_allclose(sims, want_sims, atol=1e-6)


def test_mining_with_pq_on_the_devices_equals_faiss_after_rerank(shards,
                                                                 tmp_path):
  """The 16 best candidates re-scored exactly from the embeddings: the TSV
  of faiss's own search of the same index."""
  assert _mine(shards, tmp_path / "faiss.tsv", "--index", "PQ4") == 0
  assert _mine(shards, tmp_path / "devices.tsv", "--index", "PQ4",
               "--index-on-devices") == 0
  mined = (tmp_path / "devices.tsv").read_bytes()
  assert mined and mined == (tmp_path / "faiss.tsv").read_bytes()


def test_only_a_flat_pq_is_searched_on_the_devices(shards, tmp_path, capsys):
  _refused(capsys, tmp_path, [
      "mine", "--src-emb", shards["x"], "--tgt-emb", shards["y"], "--fp16",
      "--index", IVF, "--index-on-devices", "--output",
      str(tmp_path / "out.tsv")], "use --index PQ<M>")


def test_approximate_top_k_on_the_jax_backend(shards, tmp_path):
  # On the CPU approx_max_k falls back to an exact top-k: the same TSV.
  assert _mine(shards, tmp_path / "exact.tsv") == 0
  assert _mine(shards, tmp_path / "approx.tsv", "--recall-target",
               "0.95") == 0
  assert ((tmp_path / "approx.tsv").read_bytes()
          == (tmp_path / "exact.tsv").read_bytes())


def _fake_encoder(monkeypatch, tmp_path, table: dict[str, np.ndarray]) -> str:
  """A paraphrase workdir whose encoder looks sentences up in `table`."""
  fake = types.SimpleNamespace(load_for_inference=lambda workdir: (
      lambda params, texts: np.stack([table[t] for t in texts]), None, 7))
  monkeypatch.setitem(sys.modules, "paraflax.recipes.paraphrase", fake)
  monkeypatch.setattr(paraflax.recipes, "paraphrase", fake, raising=False)
  workdir = tmp_path / "w"
  workdir.mkdir()
  (workdir / "config.json").write_text(json.dumps({"recipe": "paraphrase"}))
  return str(workdir)


def test_embed_a_glob_into_float16_shards_and_resume(tmp_path, monkeypatch,
                                                     capsys):
  x, y = _vectors()
  texts = {f"s {i}": v for i, v in enumerate(x)}
  workdir = _fake_encoder(monkeypatch, tmp_path, texts)
  for i in range(SHARDS):
    (tmp_path / f"t{i}.txt").write_text(
        "".join(f"s {j}\n" for j in range(i * 100, (i + 1) * 100)))
  out = tmp_path / "emb"
  args = ["embed", "--workdir", workdir, "--input", str(tmp_path / "t*.txt"),
          "--output", str(out)]
  assert cli.main(args) == 0
  emb, paths = embeddings_io.read_shards(str(out / "*.f16"), None, fp16=True)
  assert [pathlib.Path(p).name for p in paths] == [
      "t0.txt.f16", "t1.txt.f16", "t2.txt.f16"]
  np.testing.assert_array_equal(np.asarray(emb), x.astype(np.float16))
  # A rerun embeds only the shard that is missing.
  kept = (out / "t0.txt.f16").stat().st_mtime_ns
  (out / "t1.txt.f16").unlink()
  capsys.readouterr()
  assert cli.main(args) == 0
  assert "1 shard(s) embedded, 2 already there" in capsys.readouterr().err
  assert (out / "t0.txt.f16").stat().st_mtime_ns == kept
  np.testing.assert_array_equal(
      np.asarray(embeddings_io.read_shards(str(out / "*.f16"), None,
                                           fp16=True)[0]),
      x.astype(np.float16))
  # A shard of another text is refused, not silently kept.
  (tmp_path / "t2.txt").write_text("s 0\n")
  assert cli.main(args) != 0
  assert "holds the output of another run" in capsys.readouterr().err
