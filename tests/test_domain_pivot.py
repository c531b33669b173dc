"""Pivot paraphrases, grow-diag-final-and, LSH signatures, MonoDS, PPDB."""
import gzip
import json
import os
import pathlib

import numpy as np
import pytest
from scipy import sparse

from paraflax import cli
from paraflax import config as config_lib
from paraflax.data import paths
from paraflax.domain import alignment
from paraflax.domain import lsh
from paraflax.domain import phrases
from paraflax.domain import pivot
from paraflax.domain import pivot_blocks
from paraflax.domain import pivot_probs
from paraflax.domain import pivot_table
from paraflax.domain import table
from paraflax.training import partitioning

CONFIG = str(pathlib.Path(__file__).parents[1] / "configs" / "domain_pivot.py")


def _phrase_pairs(e, f, links, max_len):
  return sorted((" ".join(e[a:b + 1]), " ".join(f[c:d + 1]))
                for (a, b), (c, d) in phrases.extract(len(e), len(f), links,
                                                      max_len))


def test_extraction_gives_exactly_the_consistent_pairs():
  # "zu" is unaligned: pairs next to it extend over it.
  e, f = "he stays home".split(), "er bleibt zu hause".split()
  links = [(0, 0), (1, 1), (2, 3)]
  assert _phrase_pairs(e, f, links, 4) == sorted([
      ("he", "er"), ("he stays", "er bleibt"), ("he stays", "er bleibt zu"),
      ("he stays home", "er bleibt zu hause"), ("stays", "bleibt"),
      ("stays", "bleibt zu"), ("stays home", "bleibt zu hause"),
      ("home", "hause"), ("home", "zu hause")])
  assert _phrase_pairs(e, f, links, 2) == sorted([
      ("he", "er"), ("he stays", "er bleibt"), ("stays", "bleibt"),
      ("stays", "bleibt zu"), ("home", "hause"), ("home", "zu hause")])


def test_extraction_rejects_inconsistent_spans():
  # b links to both x and y, a to y: only the whole sentence is consistent.
  assert _phrase_pairs(["a", "b"], ["x", "y"], [(0, 1), (1, 0), (1, 1)],
                       4) == [("a b", "x y")]
  assert _phrase_pairs(["a", "b"], ["x", "y"], [], 4) == []


def test_grow_diag_final_and_by_hand():
  # Grows from the intersection {(0,0), (1,1)} into (1,2), the diagonal
  # (2,2), then (2,3), since each brings an unaligned word.
  assert alignment.grow_diag_final_and(
      {(0, 0), (1, 1), (2, 2)}, {(0, 0), (1, 1), (1, 2), (2, 3)}, 3, 4) == [
          (0, 0), (1, 1), (1, 2), (2, 2), (2, 3)]
  # (0,1) neighbours the intersection but both its words are aligned; (3,3)
  # is far from it and both its words are unaligned: final-and adds it, after
  # which (3,0) has an aligned word and stays out.
  assert alignment.grow_diag_final_and(
      {(0, 0), (1, 1), (3, 3)}, {(0, 0), (1, 1), (0, 1), (3, 0)}, 4, 4) == [
          (0, 0), (1, 1), (3, 3)]


def _random_language(rng, rows, held):
  counts = sparse.random(rows, 30, density=0.2, random_state=rng,
                         data_rvs=lambda n: rng.integers(1, 5, n)).tocsr()
  counts = sparse.diags(held.astype(float)) @ counts
  return counts.tocsr()


def _random_blocks(folder, rng, blocks=3, pairs=40):
  """Parts of random sentence pairs over a few words with random links:
  phrases shared across blocks, counts and probabilities full of ties."""
  paths = []
  for b in range(blocks):
    counts = phrases.PhraseCounts()
    for _ in range(pairs):
      e = [f"e{w}" for w in rng.integers(0, 6, rng.integers(1, 6))]
      f = [f"f{w}" for w in rng.integers(0, 6, rng.integers(1, 6))]
      links = sorted({(int(rng.integers(len(e))), int(rng.integers(len(f))))
                      for _ in range(len(e))})
      counts.add(e, f, links, 3)
    paths.append(str(folder / f"{b}.npz"))
    pivot_blocks.save_block(paths[-1], counts,
                            pivot_blocks.BlockStats(pairs=pairs))
  return paths


def _in_memory_table(by_lang, c):
  """The table as `paraphrase_rows` gives it over every phrase at once:
  English ids in sorted order, foreign ids in order of first appearance."""
  blocks = {l: [(pivot_blocks.block_phrases(p, "english"),
                 pivot_blocks.block_phrases(p, "foreign"),
                 *pivot_blocks.block_arrays(p))
                for p in ps] for l, ps in by_lang.items()}
  english = sorted({e for bs in blocks.values() for b in bs for e in b[0]})
  e_id = {e: i for i, e in enumerate(english)}
  langs = []
  for _, bs in sorted(blocks.items()):
    f_id, rows, cols, vals = {}, [], [], []
    for e_words, f_words, e, f, count in bs:
      rows.append(np.asarray([e_id[w] for w in e_words], np.int64)[e])
      cols.append(np.asarray([f_id.setdefault(w, len(f_id))
                              for w in f_words], np.int64)[f])
      vals.append(count)
    langs.append(pivot_probs.language(sparse.csr_matrix(
        (np.concatenate(vals).astype(np.float64),
         (np.concatenate(rows), np.concatenate(cols))),
        shape=(len(english), len(f_id))), c.max_pivots, c.max_back))
  r, col, p = pivot_probs.paraphrase_rows(langs, 0, len(english),
                                          c.max_paraphrases, c.min_prob)
  return "".join(table.format_line(english[a], english[b], v)
                 for a, b, v in zip(r, col, p))


@pytest.mark.parametrize("rows_per_block", [1, 4, 1000])
def test_streamed_table_equals_the_in_memory_one(tmp_path, rows_per_block):
  rng = np.random.default_rng(rows_per_block)
  by_lang = {"de": _random_blocks(tmp_path / "de", rng),
             "fr": _random_blocks(tmp_path / "fr", rng, blocks=2)}
  c = config_lib.load(CONFIG, [f"--config.pivot.rows_per_block="
                               f"{rows_per_block}",
                               "--config.pivot.max_pivots=3",
                               "--config.pivot.max_back=4",
                               "--config.pivot.max_paraphrases=5"]).pivot
  out = tmp_path / "table.txt"
  summary = pivot_table.write_table(by_lang, str(out), c)
  expected = _in_memory_table(by_lang, c)
  assert summary["lines"] > 100
  assert out.read_text("utf-8") == expected
  assert not [n for n in os.listdir(tmp_path) if n.startswith(".tmp")]


def test_paraphrase_probabilities_sum_to_at_most_one():
  rng = np.random.default_rng(0)
  rows = 40
  langs = [pivot_probs.language(
      _random_language(rng, rows, rng.random(rows) < p),
      max_pivots=5, max_back=7) for p in (0.9, 0.5)]
  r, c, p = pivot_probs.paraphrase_rows(langs, 0, rows, 1000, 0.0)
  sums = np.bincount(r, weights=p, minlength=rows)
  assert sums.max() <= 1 + 1e-9 and sums.max() > 0.3
  assert not np.any(r == c)
  # Unpruned and with e2 = e1 kept, a held row sums to exactly 1.
  full = [pivot_probs.language(
      _random_language(rng, rows, np.ones(rows, bool)),
      max_pivots=1000, max_back=1000)]
  total = (full[0].forward @ full[0].backward).sum(axis=1)
  held = full[0].has
  np.testing.assert_allclose(np.asarray(total).ravel()[held], 1.0)


def _events(rng, counts_by_phrase, num_features=500):
  feats = np.asarray([lsh.feature_hash(f"f{i}") for i in range(num_features)],
                     np.uint32)
  ids = np.concatenate([np.full(c.sum(), i, np.int32)
                        for i, c in enumerate(counts_by_phrase)])
  return ids, np.concatenate([np.repeat(feats, c) for c in counts_by_phrase])


@pytest.mark.parametrize("bits", [64, 256, 1024])
def test_lsh_cosine_within_theoretical_error(bits):
  rng = np.random.default_rng(bits)
  hashing = lsh.make_hashing(bits, 16, 8192, seed=1)
  mesh = partitioning.make_mesh(1)
  for _ in range(8):
    u = rng.poisson(2.0, 500)
    v = np.where(rng.random(500) < rng.random(), u, rng.poisson(2.0, 500))
    sigs = lsh.Signatures(2, hashing, mesh)
    sigs.add(*_events(rng, [u, v]))
    packed = sigs.packed()
    theta = np.arccos(u @ v / np.linalg.norm(u) / np.linalg.norm(v)) / np.pi
    estimate = np.arccos(lsh.cosine(packed[0], packed[1], bits)) / np.pi
    # Each bit differs with probability theta: a binomial share of bits.
    sigma = np.sqrt(theta * (1 - theta) / bits)
    assert abs(estimate - theta) <= 4 * sigma + 1e-3, (bits, theta, estimate)


def test_signatures_equal_on_1_and_8_devices():
  rng = np.random.default_rng(0)
  counts = [rng.poisson(1.0, 300) for _ in range(5)]
  hashing = lsh.make_hashing(64, 12, 1024, seed=3)
  out = []
  for devices in (1, 3, 8):  # 3 pads the bits to 66 and drops the padding
    sigs = lsh.Signatures(5, hashing, partitioning.make_mesh(devices))
    sigs.add(*_events(rng, counts, 300))
    out.append((sigs.sums(), sigs.packed()))
  for sums, packed in out[1:]:
    np.testing.assert_array_equal(sums, out[0][0])
    np.testing.assert_array_equal(packed, out[0][1])
  assert out[0][1].shape == (5, 8)


def test_a_sum_of_exactly_zero_sets_the_bit():
  """Bit j is 1 where sum j >= 0: a phrase no event reached (every sum
  0) has every bit set; one feature's bits follow its pool values' signs."""
  hashing = lsh.make_hashing(64, 12, 1024, seed=3)
  sigs = lsh.Signatures(2, hashing, partitioning.make_mesh(1))
  sigs.add(np.zeros(3, np.int32), np.full(3, lsh.feature_hash("f0"),
                                          np.uint32))
  sums, packed = sigs.sums(), sigs.packed()
  assert not sums[1].any()
  np.testing.assert_array_equal(packed[1], np.full(8, 255, np.uint8))
  np.testing.assert_array_equal(np.unpackbits(packed[0]), sums[0] >= 0)


def test_pivot_languages_keep_only_their_bitext(tmp_path, capsys):
  de, fr = _small_bitext(tmp_path, 40)
  out = tmp_path / "table.txt"
  assert cli.main(["pivot", "--bitext", de, fr, "--output", str(out),
                   "--max-phrase-len", "2",
                   "--config.pivot.languages=('fr',)"]) == 0
  summary = json.loads((tmp_path / "table.txt.summary.json").read_text())
  assert sorted(summary["languages"]) == ["fr"]
  assert sorted(p.name for p in (tmp_path / "table.txt.parts").iterdir()) == [
      "fr-00000.npz"]
  assert cli.main(["pivot", "--bitext", de, "--output",
                   str(tmp_path / "none.txt"),
                   "--config.pivot.languages=('fr',)"]) != 0
  assert "pivot.languages" in capsys.readouterr().err
  assert not (tmp_path / "none.txt").exists()


def _small_bitext(folder: pathlib.Path, lines: int) -> list[str]:
  """Prefixes of the first `lines` multi30k val pairs, de-en and fr-en."""
  prefixes = []
  for lang in ("de", "fr"):
    prefix = folder / f"val_{lang}"
    for side in (lang, "en"):
      with gzip.open(paths.data_path("multi30k_task1", f"val.{side}.gz"),
                     "rt", encoding="utf-8") as f:
        kept = f.read().splitlines()[:lines]
      pathlib.Path(f"{prefix}.{side}").write_text("\n".join(kept) + "\n",
                                                  "utf-8")
    prefixes.append(str(prefix))
  return prefixes


def test_sources_of_one_language_are_aligned_together(tmp_path):
  """Two bins (or Tasks) of one language: one corpus for eflomal, not two."""
  de, _ = _small_bitext(tmp_path, 60)
  second = tmp_path / "second"
  for side in ("de", "en"):
    lines = pathlib.Path(f"{de}.{side}").read_text("utf-8").splitlines()
    pathlib.Path(f"{second}.{side}").write_text(
        "\n".join(lines[30:]) + "\n", "utf-8")
  out = tmp_path / "table.txt"
  assert cli.main(["pivot", "--bitext", de, str(second), "--output",
                   str(out), "--max-phrase-len", "2"]) == 0
  assert sorted(p.name for p in (tmp_path / "table.txt.parts").iterdir()) == [
      "de-00000.npz"]
  summary = json.loads((tmp_path / "table.txt.summary.json").read_text())
  assert summary["languages"]["de"]["pairs"] == 60 + 30


def test_pivot_monods_eval_end_to_end(tmp_path):
  bitext = _small_bitext(tmp_path, 200)
  out = tmp_path / "table.txt"
  argv = ["pivot", "--bitext", *bitext, "--output", str(out),
          "--max-phrase-len", "3"]
  assert cli.main(argv) == 0
  lines = out.read_text("utf-8").splitlines()
  rows = [l.split(" ||| ") for l in lines]
  assert rows and all(len(r) == 3 for r in rows)
  keys = [(r[0], -float(r[2])) for r in rows]
  assert keys == sorted(keys), "sorted by e1, then p(e2|e1)"
  sums = {}
  for e1, _, p in rows:
    sums[e1] = sums.get(e1, 0.0) + float(p)
  assert max(sums.values()) <= 1 + 1e-4
  # A rerun after the table is lost reuses the aligned parts: same table.
  out.unlink()
  assert cli.main(argv) == 0
  assert out.read_text("utf-8").splitlines() == lines

  corpus = tmp_path / "corpus.txt"
  corpus.write_text(pathlib.Path(f"{bitext[0]}.en").read_text("utf-8"),
                    "utf-8")
  reranked = tmp_path / "reranked.txt"
  assert cli.main(["monods", "--corpus", str(corpus), "--table", str(out),
                   "--bits", "64", "--output", str(reranked),
                   "--config.mesh.num_devices=1"]) == 0
  fields = [l.split(" ||| ") for l in
            reranked.read_text("utf-8").splitlines()]
  assert len(fields) == len(lines)
  assert all(f[3].startswith("p=") and " monods=" in f[3] for f in fields)

  report = tmp_path / "ppdb"
  assert cli.main(["eval-ppdb", "--table", str(reranked), "--output",
                   str(report), "--examples", "3", "--coverage",
                   f"{bitext[0]}.en"]) == 0
  text = (tmp_path / "ppdb.md").read_text("utf-8")
  assert "| monods |" in text and "| p |" in text
  assert (tmp_path / "ppdb.json").exists()


def test_table_line_without_separator_stops_without_output(tmp_path, capsys):
  bad = tmp_path / "bad.txt"
  bad.write_text("house ||| home ||| 0.5\nhouse home 0.2\n", "utf-8")
  corpus = tmp_path / "c.txt"
  corpus.write_text("the house is here\n", "utf-8")
  out = tmp_path / "out.txt"
  assert cli.main(["monods", "--corpus", str(corpus), "--table", str(bad),
                   "--output", str(out)]) == cli.EXIT_BAD_INPUT
  assert f"{bad}:2" in capsys.readouterr().err
  assert not out.exists()
  assert cli.main(["eval-ppdb", "--table", str(bad), "--output",
                   str(tmp_path / "e")]) == cli.EXIT_BAD_INPUT
  assert not list(tmp_path.glob("e.*"))


def test_bits_not_a_multiple_of_8_stops_without_output(tmp_path, capsys):
  good = tmp_path / "t.txt"
  good.write_text("house ||| home ||| 0.5\n", "utf-8")
  out = tmp_path / "out.txt"
  assert cli.main(["monods", "--corpus", str(good), "--table", str(good),
                   "--bits", "100", "--output", str(out)]
                  ) == cli.EXIT_BAD_INPUT
  assert "multiple of 8" in capsys.readouterr().err
  assert not out.exists()


def test_unknown_bitext_names_the_forms(tmp_path, capsys):
  assert cli.main(["pivot", "--bitext", str(tmp_path / "nothing"), "--output",
                   str(tmp_path / "t.txt")]) == cli.EXIT_BAD_INPUT
  assert "bitext Task" in capsys.readouterr().err
  assert not (tmp_path / "t.txt").exists()


def test_unsorted_table_stops_without_output(tmp_path, capsys):
  bad = tmp_path / "unsorted.txt"
  bad.write_text("house ||| home ||| 0.5\ncar ||| auto ||| 0.2\n", "utf-8")
  out = tmp_path / "out.txt"
  assert cli.main(["monods", "--corpus", str(bad), "--table", str(bad),
                   "--output", str(out)]) == cli.EXIT_BAD_INPUT
  assert "not sorted by e1" in capsys.readouterr().err
  assert not out.exists()


def test_ppdb_precision_by_hand(tmp_path):
  from paraflax.evaluation import ppdb  # pylint: disable=g-import-not-at-top
  t = tmp_path / "t.txt"
  t.write_text("big ||| large ||| 0.5 ||| p=0.5 monods=0.1\n"
               "big ||| huge ||| 0.3 ||| p=0.3 monods=0.9\n"
               "big ||| a large ||| 0.2 ||| p=0.2 monods=1\n"
               "zzz ||| yyy ||| 1 ||| p=1 monods=1\n", "utf-8")
  gold = tmp_path / "ppdb.tsv"
  gold.write_text("large\tbig\n", "utf-8")
  report = ppdb.evaluate_file(str(t), str(tmp_path / "e"), ppdb=str(gold),
                              words_shown=["big", "zzz"])
  assert report["words"] == 1 and report["table_e1"] == 2
  assert report["precision"]["score"] == {"p@1": 1.0, "p@5": 0.5}
  assert report["precision"]["monods"] == {"p@1": 0.0, "p@5": 0.5}
  assert report["examples"]["zzz"]["p"] == ["yyy"]
  assert report["examples"]["big"]["monods"] == ["huge", "large*"]


def test_bitext_forms_resolve(tmp_path):
  import json  # pylint: disable=g-import-not-at-top
  sel = tmp_path / "sel"
  sel.mkdir()
  (sel / "summary.json").write_text(json.dumps(
      {"src_lang": "de", "bins": [{"bin": 1}, {"bin": 2}]}), "utf-8")
  for b in (1, 2):
    (sel / f"bin_{b}.de").write_text(f"haus {b}\n", "utf-8")
    (sel / f"bin_{b}.en").write_text(f"house {b}\n", "utf-8")
  found = pivot.resolve(f"selected:{sel}:2")
  assert [(b.lang, b.read()) for b in found] == [("de", [("haus 2",
                                                          "house 2")])]
  assert [b.name for b in pivot.resolve(str(sel / "bin_1"))] == [
      str(sel / "bin_1")]
  assert len(pivot.resolve(str(sel))) == 2
  assert pivot.resolve("bitext_multi30k_fr_en:validation")[0].lang == "fr"
  with pytest.raises(Exception, match="has bins 1, 2"):
    pivot.resolve(f"selected:{sel}:9")
  # A bin of a mixed source: P.mul, P.en and P.langs, one bitext a language.
  for ext, text in (("mul", "haus\nchat\nauto\n"), ("en", "house\ncat\ncar\n"),
                    ("langs", "de\nfr\nde\n")):
    (tmp_path / f"mix.{ext}").write_text(text, "utf-8")
  found = pivot.resolve(str(tmp_path / "mix"))
  assert [(b.lang, b.read()) for b in found] == [
      ("de", [("haus", "house"), ("auto", "car")]), ("fr", [("chat", "cat")])]
