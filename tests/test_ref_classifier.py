"""The reference-vs-translation classifier (configs/ref_classifier.py) and
`ref_prob` in score-paraphrases. Small synthetic n-best lists: they test
the mechanics (negatives, splits, training, scoring, refusals), not the
quality of a classifier on real back-translations."""
import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from paraflax import cli
from paraflax import config as config_lib
from paraflax import errors
from paraflax.data import nbest
from paraflax.data import words
from paraflax.filtering import score_paraphrases as filtering_score
from paraflax.inference import evaluate
from paraflax.inference import score_paraphrases
from paraflax.recipes import ref_classifier
from paraflax.recipes import train as train_lib
from paraflax.training import checkpointing

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONFIG = str(ROOT / "configs" / "ref_classifier.py")
_NOUNS = ("dog", "cat", "man", "woman", "child", "horse", "bird", "boy")
_VERBS = ("runs", "sits", "jumps", "sleeps", "walks", "swims")


def _records(ids: int = 40, nbest_size: int = 3) -> list[dict]:
  """Separable toy n-best lists: references say "the", translations "a"
  and end with a full stop; one translation of id 0 copies its reference."""
  out = []
  for i in range(ids):
    noun, verb = _NOUNS[i % len(_NOUNS)], _VERBS[i % len(_VERBS)]
    reference = f"the {noun} {verb} today"
    for rank in range(nbest_size):
      translation = f"a {noun} {verb} {'now ' * rank}."
      if i == 0 and rank == 1:
        translation = reference
      out.append({"id": i, "reference": reference,
                  "translation": translation, "rank": rank,
                  "cost": 0.5 + rank, "source": f"src {i}"})
  return out


def _jsonl(path: pathlib.Path, records: list[dict]) -> str:
  path.write_text("".join(json.dumps(r) + "\n" for r in records))
  return str(path)


def _config(model: str = "avg", **data):
  config = config_lib.load(f"{CONFIG}:{model}")
  config.model.word_dim = 8
  if model != "avg":
    config.model.hidden = 8
  config.batch_size = 8
  config.optimizer.learning_rate = 0.03  # a toy set: learn it in few steps
  config.train_steps = 30
  config.eval_every = config.checkpoint.every = 15
  config.log_every = 15
  config.data.update(data)
  return config


@pytest.fixture(scope="module")
def bt(tmp_path_factory) -> str:
  return _jsonl(tmp_path_factory.mktemp("bt") / "bt.jsonl", _records())


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, bt) -> pathlib.Path:
  """A classifier trained on the toy set; read it, never write to it."""
  path = tmp_path_factory.mktemp("refclf") / "w"
  train_lib.train(_config(input=bt), str(path))
  return path


# --- config, data, splits -------------------------------------------------------


@pytest.mark.parametrize("model, encoder", [("avg", "avg"),
                                            ("lstm", "lstmavg")])
def test_the_config_loads_for_both_models(model, encoder):
  config = config_lib.load(f"{CONFIG}:{model}")
  assert config.recipe == "ref_classifier" and config.model.name == encoder
  assert config.data.negative == "random" and config.loss.lambda_w > 0
  with pytest.raises(errors.ConfigError, match="use one of avg, lstm"):
    config_lib.load(f"{CONFIG}:gran")


def test_a_split_keeps_every_id_on_one_side_and_follows_the_seed(tmp_path):
  records = _records(50)
  by_rank_down = [r for i in range(0, 150, 3) for r in records[i:i + 3][::-1]]
  groups = nbest.read_groups(_jsonl(tmp_path / "bt.jsonl", by_rank_down))
  assert [len(g.translations) for g in groups] == [3] * 50
  assert groups[3].translations == ("a woman sleeps .",  # best rank first
                                    "a woman sleeps now .",
                                    "a woman sleeps now now .")
  parts = nbest.split_by_id(groups, 0.2, 0.1, seed=0)
  ids = {name: [g.id for g in part] for name, part in parts.items()}
  assert (len(ids["train"]), len(ids["dev"]), len(ids["test"])) == (35, 10, 5)
  assert sorted(sum(ids.values(), [])) == list(range(50))  # disjoint, all
  assert all(part == sorted(part) for part in ids.values())  # file order
  assert nbest.split_by_id(groups, 0.2, 0.1, seed=0) == parts
  assert nbest.split_by_id(groups, 0.2, 0.1, seed=1)["test"] != parts["test"]


def test_records_of_one_id_must_share_their_reference(tmp_path):
  records = _records(3)
  records[4]["reference"] = "something else"
  with pytest.raises(errors.DataError, match=r"bt\.jsonl:5: id 1 has "
                     "reference 'something else'"):
    nbest.read_groups(_jsonl(tmp_path / "bt.jsonl", records))


# --- negatives ----------------------------------------------------------------


def _recipe_and_batch(bt: str, negative: str):
  config = _config(input=bt, negative=negative)
  config.batch_size = 64  # every train id in one batch
  splits = ref_classifier.read_splits(config)
  vocab = words.WordVocab.build(s for g in splits["train"]
                                for s in (g.reference, *g.translations))
  encoded = ref_classifier.encode(splits["train"], vocab, 10, 3)
  recipe = ref_classifier.RefClassifierRecipe(config, vocab, encoded, splits)
  params = recipe.init_state(jax.random.key(3))["params"]
  batch = recipe.batch(np.arange(len(encoded.ref)))
  return recipe, params, batch


def test_the_hardest_negative_is_the_most_reference_like_translation(bt):
  recipe, params, batch = _recipe_and_batch(bt, "hardest")
  pick = np.asarray(recipe.pick_negatives(params, batch, jax.random.key(0)))
  rows = np.flatnonzero(batch["weight"])
  for row in rows:
    ok = np.flatnonzero(batch["cand_ok"][row])
    probs = recipe.prob.of_ids(params, [
        batch["cand"][row, j, :batch["cand_len"][row, j]] for j in ok])
    assert pick[row] == ok[np.argmax(probs)]


def test_random_negatives_are_translations_drawn_by_the_key(bt):
  recipe, params, batch = _recipe_and_batch(bt, "random")
  picks = np.stack([np.asarray(recipe.pick_negatives(
      params, batch, jax.random.key(k))) for k in range(20)])
  rows = np.flatnonzero(batch["weight"])
  assert all(batch["cand_ok"][r, picks[:, r]].all() for r in rows)
  assert {int(p) for p in picks[:, rows].ravel()} == {0, 1, 2}
  again = recipe.pick_negatives(params, batch, jax.random.key(5))
  assert (np.asarray(again) == picks[5]).all()


def test_a_copy_of_the_reference_is_never_a_negative(bt):
  groups = nbest.read_groups(bt)
  vocab = words.WordVocab.build(g.reference for g in groups)
  encoded = ref_classifier.encode(groups[:2], vocab, 10, 4)
  # Id 0's rank 1 is its reference; there is no fourth translation.
  assert encoded.cand_ok.tolist() == [[True, False, True, False],
                                      [True, True, True, False]]


# --- training, evaluation, ref_prob ------------------------------------------------


def test_training_improves_accuracy_on_a_separable_set(workdir, bt):
  config = _config(input=bt)
  recipe = ref_classifier.RefClassifierRecipe(
      config, words.WordVocab.load(workdir / "vocab.txt"),
      splits=ref_classifier.read_splits(config))
  untrained = recipe.init_state(jax.random.key(0))["params"]
  before = evaluate.evaluators.accuracy(recipe.eval_model(untrained),
                                        split="dev").metrics["accuracy"]
  reports = evaluate.evaluate(str(workdir))
  saved = json.loads((workdir / "evals.json").read_text())
  assert saved["test"]["n"] == 2 * 4 and saved["dev"]["positives"] == 4
  assert reports["dev"].metrics["accuracy"] == 100.0 > before
  assert reports["test"].metrics["accuracy"] == 100.0


def test_a_resumed_run_ends_where_an_uninterrupted_one_does(workdir, bt,
                                                           tmp_path):
  config = _config(input=bt, negative="hardest")
  config.train_steps = 15
  train_lib.train(config, str(tmp_path / "w"))
  config.train_steps = 30
  train_lib.train(config, str(tmp_path / "w"))  # resumes from step 15
  straight = _config(input=bt, negative="hardest")
  train_lib.train(straight, str(tmp_path / "straight"))
  digests = [checkpointing.params_digest(ref_classifier.load_for_inference(
      str(tmp_path / name))[1]) for name in ("w", "straight")]
  assert digests[0] == digests[1]


def test_using_a_classifier_builds_no_optimizer(workdir, forbid):
  """ref_prob and `paraflax eval` need the classifier and its parameters,
  restored alone: no training recipe, no optimizer is built."""
  forbid("an optimizer was built to use a classifier",
         (ref_classifier.optax, "adam"),
         (ref_classifier, "RefClassifierRecipe"))
  prob, params, step = ref_classifier.load_for_inference(str(workdir))
  assert step > 0 and 0 <= prob(params, ["a man rides a bike ."])[0] <= 1
  model, _ = ref_classifier.eval_model(str(workdir))
  texts, labels = model.labelled("dev")
  assert len(texts) == len(labels) > 1
  assert model.classify(texts[:2]).shape == (2,)


def test_ref_prob_is_the_classifiers_softmax(workdir, bt, tmp_path):
  out = tmp_path / "scored.jsonl"
  assert score_paraphrases.score_file(bt, str(out),
                                      classifier_workdir=str(workdir)) == 120
  scored = [json.loads(line) for line in out.read_text().splitlines()]
  prob, params, _ = ref_classifier.load_for_inference(str(workdir))
  model = ref_classifier.make_model(_config(), len(prob.vocab))
  for record in scored[:12]:
    ids = jnp.asarray([prob.vocab.encode(record["translation"])])
    logits = model.apply({"params": params}, ids, jnp.asarray([ids.shape[1]]))
    expected = float(jax.nn.softmax(logits)[0, 1])
    assert 0 <= record["scores"]["ref_prob"] <= 1
    assert record["scores"]["ref_prob"] == pytest.approx(expected, abs=1e-6)
  copies = [r for r in scored if r["translation"] == r["reference"]]
  others = [r for r in scored if r["translation"] != r["reference"]]
  assert copies[0]["scores"]["ref_prob"] > 0.5
  assert max(r["scores"]["ref_prob"] for r in others) < 0.5
  meta = json.loads((tmp_path / "scored.jsonl.meta.json").read_text())
  assert meta["scores"][-1] == "ref_prob"
  assert set(meta["resources"]["ref_prob"]) == {"checkpoint_step",
                                                "params_sha256"}


def test_a_rerun_with_another_classifier_or_none_is_refused(workdir, bt,
                                                            tmp_path):
  out = str(tmp_path / "scored.jsonl")
  score_paraphrases.score_file(bt, out, classifier_workdir=str(workdir))
  assert score_paraphrases.score_file(
      bt, out, classifier_workdir=str(workdir)) == 0  # same: nothing to do
  with pytest.raises(errors.ConfigError, match="differs in"):
    score_paraphrases.score_file(bt, out)
  other = tmp_path / "other"
  config = _config(input=bt)
  config.seed = 1
  train_lib.train(config, str(other))
  with pytest.raises(errors.ConfigError, match="differs in resources"):
    score_paraphrases.score_file(bt, out, classifier_workdir=str(other))
  assert score_paraphrases.score_file(bt, out, overwrite=True,
                                      classifier_workdir=str(other)) == 120


def test_a_cut_output_resumes_to_the_bytes_of_a_whole_run(workdir, bt,
                                                          tmp_path,
                                                          monkeypatch):
  """Blocks of 7 records: ref_prob of a block does not depend on what ran
  before it, so a run resumed after a kill writes the same bytes."""
  monkeypatch.setattr(filtering_score, "BLOCK", 7)
  whole, cut = tmp_path / "whole.jsonl", tmp_path / "cut.jsonl"
  score_paraphrases.score_file(bt, str(whole), classifier_workdir=str(workdir))
  lines = whole.read_text().splitlines(keepends=True)
  cut.write_text("".join(lines[:24]) + lines[24][:30])  # mid-block 4
  (tmp_path / "cut.jsonl.meta.json").write_text(
      (tmp_path / "whole.jsonl.meta.json").read_text())
  assert score_paraphrases.score_file(
      bt, str(cut), classifier_workdir=str(workdir)) == 120 - 21
  assert cut.read_bytes() == whole.read_bytes()


# --- bad input ----------------------------------------------------------------


def test_a_missing_or_foreign_classifier_workdir_is_named(tmp_path, bt,
                                                          capsys):
  out = str(tmp_path / "o.jsonl")
  missing = str(tmp_path / "nowhere")
  assert cli.main(["score-paraphrases", "--input", bt, "--output", out,
                   "--classifier-workdir", missing]) == cli.EXIT_BAD_INPUT
  assert "nowhere: no such directory. Train a classifier" in (
      capsys.readouterr().err)
  foreign = tmp_path / "gran"
  foreign.mkdir()
  (foreign / "config.json").write_text(json.dumps({"recipe": "paraphrase"}))
  with pytest.raises(errors.ConfigError, match="holds a 'paraphrase' model; "
                     "this command needs a 'ref_classifier' workdir"):
    score_paraphrases.score_file(bt, out, classifier_workdir=str(foreign))
  assert not pathlib.Path(out).exists()


def test_a_config_without_input_or_with_an_unknown_negative_stops(tmp_path,
                                                                  bt):
  with pytest.raises(errors.ConfigError, match="data.input is not set"):
    train_lib.train(_config(), str(tmp_path / "a"))
  with pytest.raises(errors.ConfigError, match="data.negative='best'; use "
                     "one of random, hardest"):
    train_lib.train(_config(input=bt, negative="best"), str(tmp_path / "b"))
  assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_the_lstm_model_trains_with_hardest_negatives(tmp_path, bt):
  config = _config("lstm", input=bt, negative="hardest")
  config.train_steps = config.eval_every = config.checkpoint.every = 4
  config.log_every = 4
  train_lib.train(config, str(tmp_path / "w"))
  metrics = [json.loads(l) for l in
             (tmp_path / "w" / "metrics.jsonl").read_text().splitlines()]
  assert any("dev/accuracy" in m for m in metrics)
