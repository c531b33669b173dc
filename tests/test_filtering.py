"""Filtering back-translated paraphrases: the scores against hand-computed
values, `paraflax score-paraphrases` killed anywhere and rerun, and the
filtered seqio Tasks (bounds, exact sizes, errors). Small synthetic
records: they test the mechanics, not the quality of any filter."""
import json
import math
import pathlib
import signal
import subprocess
import sys

import numpy as np
import pytest

from paraflax import choices
from paraflax import cli
from paraflax import errors
from paraflax import faults
from paraflax.filtering import score_paraphrases
from paraflax.filtering import scores

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _scores(reference: str, translation: str, cost: float = 1.0) -> dict:
  return scores.score({"reference": reference, "translation": translation,
                       "cost": cost})


# --- scores -------------------------------------------------------------------


def test_overlap_and_bleu_of_a_one_word_substitution():
  s = _scores("The cat sat on the mat", "the cat sat on A mat", 0.25)
  # ref: the cat sat on the mat; tra: the cat sat on a mat (6 tokens each).
  # 1-grams: the (min(2, 1) = 1), cat, sat, on, mat -> 5 of min(6, 6).
  # 2-grams: the cat, cat sat, sat on -> 3 of min(5, 5).
  # 3-grams: the cat sat, cat sat on -> 2 of min(4, 4).
  # 4-grams: the cat sat on -> 1 of 3 translation 4-grams.
  assert s["length"] == 6 and s["cost"] == 0.25
  assert s["overlap_1"] == pytest.approx(5 / 6)
  assert s["overlap_2"] == pytest.approx(3 / 5)
  assert s["overlap_3"] == pytest.approx(2 / 4)
  # p = (5+1)/(6+1), (3+1)/(5+1), (2+1)/(4+1), (1+1)/(3+1); r = c = 6, so
  # the penalty is exp(1 - 7/6) = exp(-1/6) (Nakov's r + 1 bites even at
  # equal lengths).
  p = (6 / 7) * (4 / 6) * (3 / 5) * (2 / 4)
  assert s["bleu"] == pytest.approx(math.exp(-1 / 6) * p ** 0.25)


def test_clipped_counts_and_the_side_with_fewer_ngrams():
  s = _scores("a a b", "a a a a")
  # 1-grams: a is min(2, 4) = 2 times shared, b never -> 2 of min(3, 4).
  # 2-grams: ref a a, a b; tra a a (x3) -> min(1, 3) = 1 of min(2, 3).
  # 3-grams: ref a a b; tra a a a (x2) -> 0 of min(1, 2).
  assert s["overlap_1"] == pytest.approx(2 / 3)
  assert s["overlap_2"] == pytest.approx(1 / 2)
  assert s["overlap_3"] == 0.0
  # p = (2+1)/(4+1), (1+1)/(3+1), (0+1)/(2+1), (0+1)/(1+1); r = 3, c = 4:
  # exp(1 - 4/4) = 1, no penalty.
  assert s["bleu"] == pytest.approx((3 / 5 * 2 / 4 * 1 / 3 * 1 / 2) ** 0.25)


def test_a_side_without_ngrams_of_an_order_overlaps_zero():
  s = _scores("Hello, world", "hello world again")
  # ref: hello , world (3); tra: hello world again (3): 2 shared 1-grams.
  # 2-grams: ref hello ,  / , world; tra hello world / world again: none.
  assert s["overlap_1"] == pytest.approx(2 / 3)
  assert s["overlap_2"] == 0.0
  short = _scores("yes", "yes indeed it is")
  # The reference has no 2-gram or 3-gram: overlap 0, not 0/0.
  assert short["overlap_1"] == 1.0
  assert short["overlap_2"] == short["overlap_3"] == 0.0


def test_an_empty_translation_scores_bleu_zero():
  s = _scores("two dogs run", "")
  assert s == {"length": 0.0, "cost": 1.0, "cost_token": None,
               "overlap_1": 0.0, "overlap_2": 0.0, "overlap_3": 0.0,
               "bleu": 0.0}


def test_cost_token_is_the_nll_per_word_of_the_translation():
  """Wieting et al. 2017's translation cost: per token of the translation
  (`cost` is per subword with EOS, as backtranslate writes it)."""
  record = {"reference": "two dogs run", "translation": "Two dogs, running",
            "cost": 0.5, "nll": 6.0}
  s = scores.score(record)
  assert s["cost"] == 0.5
  assert s["cost_token"] == pytest.approx(6.0 / 4)  # two dogs , running
  assert scores.score({**record, "translation": ""})["cost_token"] == 6.0


def test_identical_sentences_and_the_models_tokens():
  s = _scores("Don't stop!", "don't STOP !")
  # The paraphrase models' tokens: don't, stop, ! (case and spacing aside).
  assert s["length"] == 3
  assert s["overlap_1"] == s["overlap_2"] == s["overlap_3"] == 1.0
  # p_n = (m+1)/(m+1) = 1 for n <= 3 and (0+1)/(0+1) for n = 4;
  # penalty exp(1 - 4/3).
  assert s["bleu"] == pytest.approx(math.exp(1 - 4 / 3))


def test_the_scorers_are_the_offered_names():
  assert tuple(scores.SCORERS) + scores.OPTIONAL == choices.PARAPHRASE_SCORES


# --- score-paraphrases ----------------------------------------------------------


def _record(i: int, rank: int = 0) -> dict:
  """Record i: a reference of 1-9 words, a translation of 0-9 words that
  shares some of them, from a 6-word vocabulary (so n-grams repeat)."""
  rng = np.random.default_rng([i, rank])
  vocab = ["a", "man", "plays", "the", "guitar", "."]
  reference = list(rng.choice(vocab, rng.integers(1, 10)))
  translation = reference[rng.integers(0, 3):] + list(
      rng.choice(vocab, rng.integers(0, 4)))
  return {"id": i, "reference": " ".join(reference),
          "translation": " ".join(translation[:9]), "rank": rank,
          "cost": round(float(rng.random()), 2),
          "nll": round(float(rng.random()) * 10, 2), "source": f"s{i}"}


def _write_bt(path: pathlib.Path, n: int, nbest: int = 1) -> pathlib.Path:
  path.write_text("".join(json.dumps(_record(i, r)) + "\n"
                          for i in range(n) for r in range(nbest)), "utf-8")
  return path


_BLOCK = 3
_RUN = ("import sys\nfrom paraflax import cli\n"
        "from paraflax.filtering import score_paraphrases\n"
        f"score_paraphrases.BLOCK = {_BLOCK}\n"
        "sys.exit(cli.main(sys.argv[1:]))\n")


def _run(argv: list[str], crash_at: str | None = None
         ) -> subprocess.CompletedProcess:
  """`paraflax` in its own process (a kill must not end the tests), with
  blocks of _BLOCK records."""
  env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
  if crash_at:
    env[faults.ENV] = crash_at
  return subprocess.run([sys.executable, "-c", _RUN, *argv], env=env,
                        capture_output=True, text=True, timeout=120)


def _score_argv(src: pathlib.Path, out: pathlib.Path, *extra) -> list[str]:
  return ["score-paraphrases", "--input", str(src), "--output", str(out),
          *extra]


@pytest.fixture(scope="module")
def bt(tmp_path_factory) -> pathlib.Path:
  return _write_bt(tmp_path_factory.mktemp("bt") / "bt.jsonl", 10, nbest=2)


@pytest.fixture(scope="module")
def straight(bt) -> pathlib.Path:
  out = bt.parent / "straight.jsonl"
  done = _run(_score_argv(bt, out))
  assert done.returncode == 0, done.stderr
  return out


def test_every_record_unchanged_with_its_scores(bt, straight):
  inputs = [json.loads(l) for l in bt.read_text().splitlines()]
  outputs = [json.loads(l) for l in straight.read_text().splitlines()]
  assert [{k: v for k, v in r.items() if k != "scores"}
          for r in outputs] == inputs
  assert [r["scores"] for r in outputs] == [scores.score(r) for r in inputs]


# (moments, whether each kill also leaves half a record). 20 records in
# blocks of 3: 7 appends. A fresh run writes OUT.meta.json (a temp file, a
# rename), then block after block; a resumed run starts at the first block
# it lacks.
KILLS = [
    (["atomic.written:1"], False), (["atomic.renamed:1"], False),
    (["score_paraphrases.block:7"], False),  # every record, before the exit
    (["score_paraphrases.block:2", "score_paraphrases.block:1",
      "score_paraphrases.block:3"], False),
    (["score_paraphrases.block:1", "score_paraphrases.block:2"], True),
]


@pytest.mark.parametrize("moments, torn", KILLS,
                         ids=lambda v: "+".join(v) if isinstance(v, list)
                         else ("torn" if v else "whole"))
def test_killed_anywhere_resumes_to_the_same_file(bt, straight, tmp_path,
                                                 moments, torn):
  expected = straight.read_bytes()
  out = tmp_path / "killed.jsonl"
  logs = ""
  for moment in moments:
    killed = _run(_score_argv(bt, out), moment)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    logs += killed.stderr
    if torn:
      with open(out, "ab") as f:
        f.write(expected.splitlines()[-1][:25])
  for _ in range(2):  # to the end, then finished: nothing appended
    done = _run(_score_argv(bt, out))
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == expected
    logs += done.stderr
  assert logs.count("the block is redone") == (len(moments) if torn else 0)


def test_a_torn_block_is_redone(bt, straight, tmp_path):
  out = tmp_path / "torn.jsonl"
  assert _run(_score_argv(bt, out), "score_paraphrases.block:2"
              ).returncode == -signal.SIGKILL
  with open(out, "ab") as f:
    f.write(straight.read_bytes().splitlines()[7][:25])
  done = _run(_score_argv(bt, out))
  assert done.returncode == 0, done.stderr
  assert "the block is redone" in done.stderr
  assert out.read_bytes() == straight.read_bytes()


def test_another_input_is_refused_and_the_output_kept(bt, straight, tmp_path):
  out = tmp_path / "scored.jsonl"
  out.write_bytes(straight.read_bytes())
  (tmp_path / "scored.jsonl.meta.json").write_bytes(
      (bt.parent / "straight.jsonl.meta.json").read_bytes())
  other = _write_bt(tmp_path / "other.jsonl", 4)
  refused = _run(_score_argv(other, out))
  assert refused.returncode == cli.EXIT_BAD_INPUT
  assert f"{out} holds the output of another run (differs in input)" in (
      refused.stderr)
  assert out.read_bytes() == straight.read_bytes()
  replaced = _run(_score_argv(other, out, "--overwrite"))
  assert replaced.returncode == 0, replaced.stderr
  assert len(out.read_text().splitlines()) == 4


def test_an_output_with_more_records_than_the_input_is_refused(
    bt, straight, tmp_path):
  out = tmp_path / "scored.jsonl"
  out.write_bytes(straight.read_bytes() + straight.read_bytes()[:200] + b"\n")
  (tmp_path / "scored.jsonl.meta.json").write_bytes(
      (bt.parent / "straight.jsonl.meta.json").read_bytes())
  refused = _run(_score_argv(bt, out))
  assert refused.returncode == cli.EXIT_BAD_INPUT
  assert "holds more records than this run writes" in refused.stderr


def test_memory_is_flat_in_the_records(tmp_path, monkeypatch):
  """The input is streamed: no reader that loads a whole file is used."""
  from paraflax.data import jsonl  # pylint: disable=g-import-not-at-top
  from paraflax.data import readers  # pylint: disable=g-import-not-at-top

  def whole_file(*args, **kwargs):
    raise AssertionError("read a whole file")

  monkeypatch.setattr(readers, "read_lines", whole_file)
  monkeypatch.setattr(jsonl, "read_jsonl", whole_file)
  src = _write_bt(tmp_path / "bt.jsonl", 5)
  assert score_paraphrases.score_file(str(src), str(tmp_path / "o")) == 5


# --- filtered Tasks -----------------------------------------------------------


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> pathlib.Path:
  folder = tmp_path_factory.mktemp("scored")
  src = _write_bt(folder / "bt.jsonl", 60, nbest=2)
  score_paraphrases.score_file(str(src), str(folder / "scored.jsonl"))
  return folder / "scored.jsonl"


def _best(path: pathlib.Path) -> list[dict]:
  return [r for r in map(json.loads, path.read_text().splitlines())
          if r["rank"] == 0]


def _pairs(data_filter, path: pathlib.Path, max_pairs: int = 0,
           seed: int = 0) -> list[tuple[str, str]]:
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  name = tasks.register_backtranslated(str(path), data_filter, max_pairs,
                                       seed)
  return [(e["sentence1"], e["sentence2"])
          for e in tasks.examples(name, "train")]


def _bounds(values: list[float]) -> list[tuple[float, float]]:
  """Bounds that fall on values (inclusive ends), between them, and
  around all of them."""
  v = sorted(set(values))
  return [(v[1], v[-2]), (v[0], v[0]), ((v[0] + v[1]) / 2, v[-1]),
          (v[0] - 1, v[-1] + 1)]


@pytest.mark.parametrize("score", list(scores.SCORERS))  # what every file has
def test_a_filter_keeps_exactly_the_pairs_inside_its_bounds(scored, score):
  best = _best(scored)
  for lo, hi in _bounds([r["scores"][score] for r in best]):
    kept = _pairs(dict(score=score, lo=lo, hi=hi), scored)
    assert kept == [(r["reference"], r["translation"]) for r in best
                    if lo <= r["scores"][score] <= hi], (lo, hi)


def test_max_pairs_is_exact_and_the_same_for_the_same_seed(scored):
  data_filter = dict(score="overlap_1", lo=0.0, hi=0.9)
  inside = _pairs(data_filter, scored)
  picks = {seed: _pairs(data_filter, scored, 12, seed) for seed in (0, 1)}
  for seed, pick in picks.items():
    assert len(pick) == 12 and set(pick) <= set(inside)
    assert pick == [p for p in inside if p in pick]  # file order
    assert _pairs(data_filter, scored, 12, seed) == pick
  assert picks[0] != picks[1]
  everything = _pairs(None, scored)
  drawn = _pairs(dict(score="random"), scored, 12, 0)
  assert len(drawn) == 12 and set(drawn) <= set(everything)
  assert drawn == _pairs(None, scored, 12, 0)  # max_pairs alone: the same


def test_no_filter_keeps_the_task_it_always_was(scored):
  from paraflax.data import tasks  # pylint: disable=g-import-not-at-top
  assert tasks.register_backtranslated(str(scored), None, 0, 3) == (
      tasks.register_backtranslated(str(scored)))
  assert _pairs(None, scored) == [(r["reference"], r["translation"])
                                  for r in _best(scored)]


@pytest.mark.parametrize("data_filter, max_pairs, message", [
    (dict(score="ppl", lo=0, hi=1), 0,
     r"the score is one of length, cost, cost_token, overlap_1, overlap_2, "
     r"overlap_3, "
     r"bleu, ref_prob, lm_ppl, random"),
    (dict(score="length", lo=5, hi=2), 0, r"lo 5 > hi 2"),
    (dict(score="length", lo=5), 0, r"give exactly score, lo and hi"),
    (dict(score="random"), 0, r"set data\.max_pairs > 0"),
    (None, -1, r"data\.max_pairs=-1"),
])
def test_a_bad_filter_names_the_key(scored, data_filter, max_pairs, message):
  with pytest.raises(errors.ConfigError, match=message):
    _pairs(data_filter, scored, max_pairs)


def test_too_few_pairs_says_how_many_the_filter_kept(scored):
  kept = len(_pairs(dict(score="length", lo=0, hi=4), scored))
  with pytest.raises(errors.DataError,
                     match=rf"length in \[0, 4\] keeps {kept} pairs, fewer "
                     rf"than data\.max_pairs={kept + 1}"):
    _pairs(dict(score="length", lo=0, hi=4), scored, kept + 1)


def test_a_filter_error_names_the_file_as_it_was_given(scored, monkeypatch):
  monkeypatch.chdir(scored.parent)  # a sweep's scored file, named relative
  with pytest.raises(errors.DataError) as e:
    _pairs(dict(score="length", lo=0, hi=4), pathlib.Path(scored.name), 10**6)
  assert str(e.value).startswith(f"{scored.name}: data.filter length")


def test_a_filter_needs_a_scored_file(tmp_path):
  unscored = _write_bt(tmp_path / "bt.jsonl", 3)
  with pytest.raises(errors.DataError,
                     match=r"bt\.jsonl:1: the record has no scores\.bleu.*"
                     r"paraflax score-paraphrases"):
    _pairs(dict(score="bleu", lo=0, hi=1), unscored)
  assert len(_pairs(dict(score="random"), unscored, 2)) == 2  # no score read


def test_the_filter_draws_with_numpy_not_tensorflow_state(scored):
  """The draw is a pure function of (pairs kept, N, seed)."""
  inside = _pairs(dict(score="cost", lo=0.0, hi=0.6), scored)
  pick = _pairs(dict(score="cost", lo=0.0, hi=0.6), scored, 5, 7)
  chosen = np.sort(np.random.default_rng(7).choice(len(inside), 5,
                                                   replace=False))
  assert pick == [inside[i] for i in chosen]
