"""The noise injector (Khayrallah & Koehn 2018's kinds): its rates, what
each kind does to a line, and that a seed gives the same corpus."""
import json

import pytest

from paraflax import errors
from paraflax.filtering import noise


def _bitext(n=200):
  source = [f"quelle {i} satz nummer {i} hier" for i in range(n)]
  target = [f"source {i} sentence number {i} here" for i in range(n)]
  return source, target


RATES = {"misaligned": 0.1, "untranslated": 0.05, "wrong_language": 0.15,
         "short": 0.1, "misordered": 0.2}
THIRD = ["une phrase", "deux phrases ici"]


def test_each_kind_takes_its_rate_of_the_lines():
  source, target = _bitext()
  out = noise.inject(source, target, RATES, seed=3, third=THIRD)
  for kind, rate in RATES.items():
    assert out.label.count(kind) == round(rate * 200)
  assert out.label.count(noise.CLEAN) == 80
  for i, kind in enumerate(out.label):
    if kind == noise.CLEAN:
      assert (out.source[i], out.target[i]) == (source[i], target[i])
    elif kind == "misaligned":
      assert out.target[i] in target and out.target[i] != target[i]
    elif kind == "untranslated":
      assert out.target[i] == source[i]
    elif kind == "wrong_language":
      assert out.target[i] in THIRD
    elif kind == "short":
      assert 1 <= len(out.source[i].split()) <= 2
      assert target[i].startswith(out.target[i])
    else:  # misordered: the same words
      assert sorted(out.target[i].split()) == sorted(target[i].split())
      assert out.source[i] == source[i]


def test_the_same_seed_gives_the_same_corpus(tmp_path):
  source, target = _bitext()
  paths = []
  for name, seed in (("a", 1), ("b", 1), ("c", 2)):
    out = noise.inject(source, target, RATES, seed=seed, third=THIRD)
    path = tmp_path / f"{name}.tsv"
    noise.write(out, str(path), {"seed": seed})
    paths.append(path)
  assert paths[0].read_bytes() == paths[1].read_bytes()
  assert paths[0].read_bytes() != paths[2].read_bytes()
  info = json.loads((tmp_path / "a.tsv.json").read_text())
  assert info["counts"]["misordered"] == 40 and info["lines"] == 200
  assert len((tmp_path / "a.tsv.labels").read_text().split()) == 200


def test_bad_rates_are_refused():
  source, target = _bitext(10)
  with pytest.raises(errors.ConfigError, match="unknown noise"):
    noise.inject(source, target, {"typos": 0.1})
  with pytest.raises(errors.ConfigError, match="at most 1"):
    noise.inject(source, target, {"misaligned": 0.6, "short": 0.6})
  with pytest.raises(errors.ConfigError, match="third language"):
    noise.inject(source, target, {"wrong_language": 0.1})


def test_a_tab_inside_a_sentence_reads_back_as_two_fields(tmp_path):
  from paraflax.data import specs  # pylint: disable=g-import-not-at-top
  source = ['"Zwei Männer in einer \tWasserfontäne."', "ein satz"]
  target = ["Two men in a fountain.", "a line\nbroken"]
  path = tmp_path / "noisy.tsv"
  noise.write(noise.inject(source, target, {}), str(path), {})
  assert specs.pairs(f"tsv:{path}") == [
      ('"Zwei Männer in einer  Wasserfontäne."', "Two men in a fountain."),
      ("ein satz", "a line broken")]
