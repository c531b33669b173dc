"""paraflax from Python: the functions the command line calls, for scripts
and notebooks.

    import paraflax
    model = paraflax.load("runs/bi_de_en")       # whatever its recipe
    x = model.embed(["Guten Morgen."], lang="de")  # [1, d] float32
    y = model.embed(["Good morning."], lang="en")
    pairs = paraflax.mine(x, y, k=1)              # (src, tgt, score)

Every name here is re-exported by `paraflax` (in `paraflax.__all__`) and
imported only when first used, so `import paraflax` loads neither TensorFlow
nor jax. Errors are `paraflax.ConfigError` (a setting or a model that cannot
do what was asked), `paraflax.DataError` (an input that cannot be used) and
`paraflax.NoCheckpointError` (a workdir with nothing to restore).

Inputs are checked as the command line checks a file's lines: sentences
come as a list (or any iterable) of str, one sentence each, never a str
alone (that would be read as its characters: pass ["a sentence"]); an
empty list is an error, as an empty input file is (there is nothing to
embed, translate or score); an item that is not a str is an error naming
its index and type; `embed` and `score_pairs` refuse empty (blank)
sentences as `paraflax embed` and `paraflax score-pairs` refuse empty
lines, naming the index, while `translate` gives one "" as `paraflax
translate` leaves an empty line empty. `mine` refuses a threshold that is
NaN or infinite as `paraflax mine --threshold` does.
"""
from __future__ import annotations

import os
import pathlib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from paraflax import choices
from paraflax import errors

if TYPE_CHECKING:  # only for the annotations: importing them loads jax
  import numpy as np
  from paraflax.evaluation import mining_set
  from paraflax.mining import margin as margin_lib
  from paraflax.recipes import nmt

Pair = tuple[int, int]
_SHOWN = 40  # characters of a bad item that a message quotes


def _quoted(value: Any) -> str:
  shown = repr(value)
  return shown if len(shown) <= _SHOWN else shown[:_SHOWN] + "..."


def _sentences(texts: Any, name: str, what: str, *, blank: bool = False
               ) -> list[str]:
  """`texts` as a list of str sentences, or DataError: a str alone, no
  sentence at all, an item that is not a str (its index and type), or,
  unless `blank`, an empty sentence (its index). `name` is the argument,
  `what` the work ("embed") for the messages."""
  if isinstance(texts, (str, bytes, bytearray)):
    raise errors.DataError(
        f"{name} is one {type(texts).__name__} ({_quoted(texts)}), not a "
        f"list of sentences; pass a list: [{name}] for one sentence (a str "
        "alone would be taken as its characters).")
  try:
    items = list(texts)
  except TypeError:
    raise errors.DataError(
        f"{name} is {_quoted(texts)} ({type(texts).__name__}), not a list "
        "of sentences; "
        "pass a list of str, one sentence each.") from None
  if not items:
    raise errors.DataError(f"{name} is empty: no sentence to {what}. Pass "
                           "a list of at least one sentence.")
  for i, text in enumerate(items):
    if not isinstance(text, str):
      raise errors.DataError(
          f"{name}[{i}] is {_quoted(text)} ({type(text).__name__}), not a "
          "str: every item is one sentence as a str.")
    if not blank and not text.strip():
      raise errors.DataError(
          f"{name}[{i}] is an empty sentence ({text!r}): there is nothing "
          f"to {what}. Remove it (the command line refuses empty lines "
          "too).")
  return items


class Model:
  """A trained workdir, restored from its best checkpoint (else its newest).

  `recipe` names what it holds: "paraphrase" (an English sentence encoder),
  "bilingual" (one encoder per language, into one space) or "nmt" (a
  translator into English). Methods the recipe cannot serve raise
  ConfigError saying which recipe can.
  """

  def __init__(self, workdir: str | os.PathLike):
    from paraflax.recipes import workdir as workdir_lib  # pylint: disable=g-import-not-at-top
    self.workdir = os.fspath(workdir)
    self.config = workdir_lib.read_config(self.workdir)
    self.recipe: str = self.config.recipe
    self.step: int = -1  # the restored checkpoint's step
    self._embed = None
    self._translator = None
    if self.recipe == "nmt":
      from paraflax.recipes import nmt as nmt_lib  # pylint: disable=g-import-not-at-top
      self._translator = nmt_lib.load_translator(self.workdir)
      self.step = self._translator[2]
    else:
      from paraflax.recipes import embedders  # pylint: disable=g-import-not-at-top
      embedders.check(self.workdir, [])  # a recipe that embeds
      self._embed, self.step = embedders.load(self.workdir, [])

  def __repr__(self) -> str:
    return (f"paraflax.Model({self.workdir!r}, recipe={self.recipe!r}, "
            f"step={self.step})")

  @property
  def languages(self) -> tuple[str, ...]:
    """The languages `embed` reads (none for an nmt model)."""
    if self.recipe == "bilingual":
      from paraflax.recipes import bilingual  # pylint: disable=g-import-not-at-top
      return tuple(bilingual.languages(self.config))
    return ("en",) if self.recipe == "paraphrase" else ()

  def _cannot(self, what: str, recipes: str) -> errors.ConfigError:
    return errors.ConfigError(
        f"{self.workdir} holds a {self.recipe!r} model, which cannot {what}; "
        f"load a {recipes} workdir.")

  def embed(self, texts: Sequence[str], lang: str | None = None
            ) -> np.ndarray:
    """[len(texts), d] float32 sentence embeddings of a list of sentences
    (str, none empty; an empty list is a DataError). `lang` picks a
    bilingual model's encoder (required there); a paraphrase model embeds
    English (None or "en")."""
    if self._embed is None:
      raise self._cannot("embed sentences", "'paraphrase' or 'bilingual'")
    texts = _sentences(texts, "texts", "embed")
    from paraflax.recipes import embedders  # pylint: disable=g-import-not-at-top
    embedders.check(self.workdir, [lang], "lang")
    return self._embed(texts, lang)

  def translate(self, texts: Sequence[str], beam: int = 5, nbest: int = 1,
                alpha: float | None = None, batch_size: int = 32,
                stop: str = "exact"
                ) -> list[str] | list[list[nmt.Hypothesis]]:
    """Translations into English of a list of sentences (str; an empty
    list is a DataError), in input order: the 1-best texts when `nbest` is
    1, else each input's `nbest` Hypothesis(text, score, logprob, tokens,
    ended), best first. An empty sentence gets "" (none); inputs over
    data.max_len subwords are truncated. `alpha` (length normalisation)
    defaults to the config's; `stop` as `paraflax translate --stop`."""
    if self._translator is None:
      raise self._cannot("translate", "'nmt'")
    texts = _sentences(texts, "texts", "translate", blank=True)
    from paraflax.recipes import translation  # pylint: disable=g-import-not-at-top
    translator, params, _ = self._translator
    found = translation.translate_texts(
        translator, params, texts, beam=beam, nbest=nbest, alpha=alpha,
        batch_size=batch_size, stop=stop)
    if nbest == 1:
      return [hyps[0].text if hyps else "" for hyps in found]
    return found

  def score_pairs(self, src: Sequence[str], tgt: Sequence[str],
                  similarity: str = "cosine", *, src_lang: str | None = None,
                  tgt_lang: str | None = None, k: int = 10) -> np.ndarray:
    """[N] float32 scores of the pairs (src[i], tgt[i]), higher = more
    likely a translation, as `paraflax score-pairs`. By default `src` is in
    the non-English language and `tgt` in English; `similarity` is one of
    cosine, euclidean, csls (its `k` neighbours among the other side) or mlp
    (after `paraflax train-mlp`). Needs a bilingual model."""
    if self.recipe != "bilingual":
      raise self._cannot("score sentence pairs", "'bilingual'")
    src = _sentences(src, "src", "score")
    tgt = _sentences(tgt, "tgt", "score")
    if len(src) != len(tgt):
      raise errors.DataError(f"{len(src)} source and {len(tgt)} target "
                             "sentences: give one target per source.")
    if similarity not in choices.SIMILARITIES:
      raise errors.ConfigError(f"similarity={similarity!r}; use one of "
                               f"{', '.join(choices.SIMILARITIES)}.")
    from paraflax.evaluation import bilingual as bilingual_eval  # pylint: disable=g-import-not-at-top
    from paraflax.recipes import scoring  # pylint: disable=g-import-not-at-top
    default = scoring.workdir_languages(self.workdir)
    src_lang, tgt_lang = src_lang or default[0], tgt_lang or default[1]
    other = scoring.check_languages(self.workdir, src_lang, tgt_lang)
    enc = bilingual_eval.Encoders(self.workdir, self._embed, other, self.step)
    return scoring.score_pairs(enc, list(zip(src, tgt)), src_lang, similarity,
                               scoring.context(similarity, self.workdir, k=k))


def load(workdir: str | os.PathLike) -> Model:
  """The model trained in `workdir`, whatever its recipe."""
  return Model(workdir)


def train(config: Any, workdir: str | os.PathLike,
          overrides: Sequence[str] = ()) -> Model:
  """Trains (or resumes) `config` in `workdir` as `paraflax train` does and
  returns the trained model. `config`: a ConfigDict, or a config file
  ("configs/bilingual.py", "configs/bilingual.py:de"); `overrides`:
  "--config.key=value" strings, applied after it."""
  from paraflax.recipes import train as train_lib  # pylint: disable=g-import-not-at-top
  train_lib.train(os.fspath(config) if isinstance(config, os.PathLike)
                  else config, os.fspath(workdir), overrides)
  return load(workdir)


def _check_mining(margin: str, retrieval: str,
                  threshold: float | None = None) -> None:
  """The checks of `paraflax mine`'s settings (`pipeline.Options`): the
  margin and retrieval among the choices, a finite threshold."""
  import numbers  # pylint: disable=g-import-not-at-top
  from paraflax.mining import pipeline  # pylint: disable=g-import-not-at-top
  if threshold is not None and (isinstance(threshold, bool) or
                                not isinstance(threshold, numbers.Real)):
    raise errors.ConfigError(
        f"threshold={_quoted(threshold)} ({type(threshold).__name__}); "
        "use a finite number (or None to keep every pair).")
  pipeline.Options(margin=margin, retrieval=retrieval, threshold=threshold)


def _embeddings(value: Any, name: str) -> Any:
  """`value` as an array of numbers, or DataError naming `name` and what
  it holds instead (the k-NN checks its shape and finite rows)."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  try:
    array = np.asarray(value)
  except (ValueError, TypeError) as e:  # ragged rows
    raise errors.DataError(f"{name} is not an array of embeddings [rows, "
                           f"dim]: {e}") from None
  if array.dtype.kind not in "fiu":
    raise errors.DataError(
        f"{name} holds {array.dtype} values, not numbers: pass embeddings "
        "as a [rows, dim] float array (e.g. what Model.embed returns).")
  return value


def mine(x: Any, y: Any, k: int = 4, margin: str = "ratio",
         retrieval: str = "max", threshold: float | None = None
         ) -> margin_lib.Mined:
  """Margin-based mining (Artetxe & Schwenk 2019) of embeddings x [Nx, d]
  and y [Ny, d], exact k-NN both ways: the pairs as (src, tgt, score)
  arrays, src and tgt indexing x and y, by descending score. `margin`: ratio,
  distance or absolute; `retrieval`: fwd, bwd, intersect or max (each
  sentence at most once); pairs under `threshold` (a finite number) are
  dropped."""
  _check_mining(margin, retrieval, threshold)
  x, y = _embeddings(x, "x"), _embeddings(y, "y")
  from paraflax.mining import margin as margin_lib  # pylint: disable=g-import-not-at-top
  return margin_lib.mine(x, y, k, margin=margin, strategy=retrieval,
                         threshold=threshold)


def candidates(x: Any, y: Any, k: int = 4, margin: str = "ratio"
               ) -> margin_lib.Mined:
  """Every pair that `mine` chooses from (a sentence and one of its k
  nearest neighbours, either way) once, with its margin score."""
  _check_mining(margin, "max")
  x, y = _embeddings(x, "x"), _embeddings(y, "y")
  from paraflax.mining import margin as margin_lib  # pylint: disable=g-import-not-at-top
  return margin_lib.every_candidate(
      margin_lib.score_candidates(x, y, k, margin=margin))


def best_threshold(pairs: margin_lib.Mined, gold: Iterable[Pair]
                   ) -> tuple[float, float, float, float]:
  """(threshold, precision, recall, F1) at the F1-optimal threshold of
  `pairs` (from `mine` or `candidates`) against the gold (src, tgt) pairs
  (BUCC's rule); inf and zeros when no pair is gold."""
  from paraflax.mining import margin as margin_lib  # pylint: disable=g-import-not-at-top
  return margin_lib.best_threshold(pairs.score, pairs.src, pairs.tgt,
                                   set(gold))


def mining_benchmark(lang: str = "", split: str = "", gold: int = 1000,
                     distractors: int = 4000, seed: int = 0, *,
                     data: str = "") -> mining_set.MiningSet:
  """A mining benchmark as `paraflax mining-set` writes it: .src
  (non-English) and .tgt (English) sentences, the .gold (src, tgt) index
  pairs hidden among them, and the .recipe that made them. `lang` and
  `split`: the bundled news sets; or `data`, a data spec of any bitext
  (e.g. "bitext_multi30k_de_en:validation"), as `mining-set --data`."""
  from paraflax.evaluation import mining_set as mining_set_lib  # pylint: disable=g-import-not-at-top
  if bool(data) == bool(lang or split):
    raise errors.ConfigError(
        "give lang and split (the bundled news sets) or data (a data spec "
        "of any bitext), not both.")
  if data:
    return mining_set_lib.build_from_bitext(
        data, gold=gold, distractors=distractors, seed=seed)
  return mining_set_lib.build(lang, split, gold=gold, distractors=distractors,
                              seed=seed)


def tasks() -> dict[str, str]:
  """The registered seqio Task and Mixture names, each with its features and
  splits (`paraflax tasks`); nothing heavy is loaded."""
  from paraflax.data import corpora  # pylint: disable=g-import-not-at-top
  return corpora.catalogue()


def task(name: str) -> Any:
  """The seqio Task (or Mixture) `name`, registered first (loads
  TensorFlow)."""
  from paraflax.data import tasks as tasks_lib  # pylint: disable=g-import-not-at-top
  tasks_lib.register()
  import seqio  # pylint: disable=g-import-not-at-top
  if name in seqio.MixtureRegistry.names():
    return seqio.MixtureRegistry.get(name)
  if name not in seqio.TaskRegistry.names():
    raise errors.ConfigError(f"unknown Task or Mixture {name!r}; "
                             "paraflax.tasks() lists them.")
  return seqio.TaskRegistry.get(name)


def examples(name: str, split: str) -> list[dict[str, str | float]]:
  """All examples of a Task or Mixture's `split` in file order, as dicts of
  Python strings (and a float STS `score`)."""
  from paraflax.data import tasks as tasks_lib  # pylint: disable=g-import-not-at-top
  return tasks_lib.examples(name, split)


def data_dir() -> pathlib.Path:
  """Where the corpora are read: $PARAFLAX_DATA_DIR, else ../shared/data
  beside the checkout (it may not exist)."""
  from paraflax.data import paths  # pylint: disable=g-import-not-at-top
  return paths.data_dir()


def fetch_data(root: str | os.PathLike, mirror: str | None = None
               ) -> pathlib.Path:
  """Downloads the public corpora a de-en model and its mining benchmark
  need (Multi30k, WMT news test sets) into `root`, checked by sha256, and
  returns it: set PARAFLAX_DATA_DIR to it. `mirror`: a base URL serving
  the same files (see `paraflax.data.download`)."""
  from paraflax.data import download  # pylint: disable=g-import-not-at-top
  return download.fetch(root, mirror)


def _read_json(path: str, what: str, write: str, key: str) -> dict[str, Any]:
  """The dict in `path`, which a command writes (`write` says how) with a
  list under `key`; else a DataError naming the file and the fix."""
  import json  # pylint: disable=g-import-not-at-top
  try:
    with open(path, encoding="utf-8") as f:
      found = json.load(f)
  except FileNotFoundError:
    raise errors.DataError(f"{path} does not exist: {write}.") from None
  except json.JSONDecodeError as e:
    raise errors.DataError(f"{path} is not {what}: {e}") from None
  if not isinstance(found, dict) or not isinstance(found.get(key),
                                                   (list, dict)):
    raise errors.DataError(f"{path} is not {what}: it has no \"{key}\".")
  return found


def sweep_results(workdir: str | os.PathLike) -> dict[str, Any]:
  """The table `paraflax sweep --workdir W` wrote, W/results.json: a dict
  with "base" (the sweep's base config), "columns" (its extra metrics) and
  "points", one dict per point in sweep order: "name", "overrides"
  ("key=value" strings), "status" ("finished", "not finished" or
  "failed: ..."), and for a finished point "checkpoint_step", "select" (the
  dev metric that picked the checkpoint), "selected" (its value), "columns"
  ({metric: value or None}) and "metrics" (every metric of its evals).
  Raises DataError when W holds no table (run `paraflax sweep` or
  `paraflax sweep --report-only` first)."""
  from paraflax.recipes import sweep  # pylint: disable=g-import-not-at-top
  workdir = os.fspath(workdir)
  return _read_json(
      os.path.join(workdir, sweep.RESULTS + ".json"), "a sweep table",
      f"run `paraflax sweep --config ... --workdir {workdir}` (or add "
      "--report-only once its points are finished) to write it", "points")


def domain_results(output: str | os.PathLike) -> dict[str, Any]:
  """The perplexity curve `paraflax eval-domain --output OUT` wrote,
  OUT/results.json: "select_dir", "test", "test_sentences" and "rows", one
  dict per selection method ("moore_lewis", "random", "ngram_overlap") and
  size: "method", "size", "perplexity", "perplexity_no_oov" (without the
  test words the LM never saw) and "oov_rate". Raises DataError when OUT
  holds no curve."""
  output = os.fspath(output)
  return _read_json(
      os.path.join(output, "results.json"), "an eval-domain curve",
      "run `paraflax eval-domain --select-dir SEL --test TEST --output "
      f"{output}` to write it", "rows")


def ppdb_results(output: str | os.PathLike) -> dict[str, Any]:
  """The report `paraflax eval-ppdb --output OUT` wrote, OUT.json (`OUT`
  or `OUT.json`): "table", "words" (the single words of the table that
  PPDB knows), "precision" ({ranking: {"p@1": .., "p@5": ..}}, a ranking
  being the table's "score" or one of its features such as "p" and
  "monods"), "coverage" ({text: {n: {"tokens": share of the n-gram
  occurrences, "types": of the distinct n-grams, "ngrams"}}}, n "1".."4"
  and "all"; only with --coverage) and "examples". Raises DataError when
  there is no report."""
  path = os.fspath(output)
  path = path if path.endswith(".json") else path + ".json"
  return _read_json(path, "an eval-ppdb report", "run `paraflax eval-ppdb "
                    f"--table TABLE --output {path[:-5]}` to write it",
                    "precision")


def paraphrases(table: str | os.PathLike, phrase: str, n: int = 5,
                by: str = "score") -> list[tuple[str, float]]:
  """The `n` best paraphrases (e2, value) of `phrase` in a paraphrase
  table of `paraflax pivot` or `paraflax monods`, highest first, ties by
  e2. `by`: the table's "score" (p(e2|e1) in a pivot table, the
  combination in a reranked one) or one of its features ("p", "monods").
  The phrase is looked up as the tables write it (lowercased, tokenised);
  a phrase the table lacks has none. A plain table is searched by
  bisection, so a word is found at once in a table of gigabytes."""
  from paraflax.data import words  # pylint: disable=g-import-not-at-top
  from paraflax.domain import table as table_lib  # pylint: disable=g-import-not-at-top
  found = table_lib.entries_of(table, " ".join(words.tokenize(phrase)))
  if found and by != "score" and any(by not in e.features for e in found):
    raise errors.ConfigError(
        f"by={by!r}: {os.fspath(table)} has the features "
        f"{', '.join(sorted(found[0].features)) or 'none'}; use one of them "
        "or \"score\".")
  value = (lambda e: e.score) if by == "score" else (
      lambda e: e.features[by])
  ranked = sorted(found, key=lambda e: (-value(e), e.e2))
  return [(e.e2, value(e)) for e in ranked[:n]]
