"""A catalogue of user mistakes and faults, across every command: each ends
with exit code 2, one message that names the file / line / key and the fix,
no traceback, and no output or temp file left behind."""
from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import re
from collections.abc import Callable

import numpy as np
import pytest

from paraflax import cli
from paraflax.mining import embeddings_io

ROOT = pathlib.Path(__file__).resolve().parents[1]
AVG = str(ROOT / "configs" / "avg.py")
REF_CLASSIFIER = str(ROOT / "configs" / "ref_classifier.py")


@dataclasses.dataclass
class Case:
  # (tmp folder) -> argv; files it creates are inputs, never outputs.
  argv: Callable[[pathlib.Path], list[str]]
  message: str  # regex the error must match
  outputs: tuple[str, ...] = ("out",)  # names under tmp that must not exist


def _write(tmp: pathlib.Path, name: str, content: bytes | str) -> str:
  path = tmp / name
  path.parent.mkdir(parents=True, exist_ok=True)
  if isinstance(content, str):
    content = content.encode("utf-8")
  path.write_bytes(content)
  return str(path)


def _fake_workdir(tmp: pathlib.Path, recipe: str, **extra) -> str:
  """A workdir with only a config.json: enough for the checks that run
  before any checkpoint is read."""
  config = {"recipe": recipe, **extra}
  return _write(tmp, "w/config.json", json.dumps(config)).rsplit("/", 1)[0]


def _emb(tmp: pathlib.Path, name: str, rows: int = 6, dim: int = 4) -> str:
  path = str(tmp / name)
  embeddings_io.write(path, np.random.default_rng(0).normal(
      size=(rows, dim)).astype(np.float32))
  return path


def _raw_emb(tmp: pathlib.Path, name: str, rows: int = 6, dim: int = 4
             ) -> str:
  """An embedding file as LASER writes it: no sidecar."""
  return _write(tmp, name, np.random.default_rng(0).normal(
      size=(rows, dim)).astype(np.float32).tobytes())


def _folder(tmp: pathlib.Path, name: str) -> str:
  (tmp / name).mkdir()
  return str(tmp / name)


def _mine(tmp, *extra: str) -> list[str]:
  return ["mine", "--src-emb", _emb(tmp, "x.f32"), "--tgt-emb",
          _emb(tmp, "y.f32"), "--dim", "4", "--output", str(tmp / "out"),
          *extra]


def _train(tmp, *extra: str, workdir: str | None = None) -> list[str]:
  return ["train", "--config", AVG, "--workdir",
          workdir or str(tmp / "out"), *extra]


_BT = {"id": 0, "reference": "a man plays", "translation": "a man is playing",
       "rank": 0, "cost": 0.5, "source": "x"}
_SCORED = {**_BT, "scores": {"length": 4.0, "cost": 0.5, "overlap_1": 0.67,
                             "overlap_2": 0.5, "overlap_3": 0.0, "bleu": 0.3}}


def _jsonl(tmp: pathlib.Path, *records: dict | str) -> str:
  return _write(tmp, "bt.jsonl", "".join(
      (r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))


def _text(tmp: pathlib.Path, name: str, text: str) -> str:
  (tmp / name).write_text(text, encoding="utf-8")
  return str(tmp / name)


_SCORED_P = {**_SCORED, "scores": {**_SCORED["scores"], "ref_prob": 0.4}}


def _analyze(tmp: pathlib.Path, *records: dict | str) -> list[str]:
  return ["analyze-backtranslations", "--input", _jsonl(tmp, *records),
          "--output", str(tmp / "out")]


def _score(tmp: pathlib.Path, *records: dict | str) -> list[str]:
  return ["score-paraphrases", "--input", _jsonl(tmp, *records), "--output",
          str(tmp / "out")]


def _train_filtered(tmp: pathlib.Path, data_filter: str, *records: dict,
                    max_pairs: int = 0) -> list[str]:
  return _train(tmp, f"--config.data.task=backtranslated:{_jsonl(tmp, *records)}",
                f"--config.data.filter={data_filter}",
                f"--config.data.max_pairs={max_pairs}")


def _read_only_dir(tmp: pathlib.Path) -> str:
  path = tmp / "ro"
  path.mkdir()
  path.chmod(0o555)
  return str(path / "w")


def _select(t: pathlib.Path, *extra: str, indomain: str = "a b\nb c\n",
            de: str = "x\n" * 5, en: str = "d e\n" * 5) -> list[str]:
  """select-domain on small files written into `t`."""
  for name, text in (("in.txt", indomain), ("g.de", de), ("g.en", en)):
    (t / name).write_text(text, encoding="utf-8")
  return ["select-domain", "--in-domain", str(t / "in.txt"), "--general-src",
          str(t / "g.de"), "--general-tgt", str(t / "g.en"), "--src-lang",
          "de", "--output", str(t / "out"), "--bins", "2", *extra]


def _with(argv: list[str], flag: str, value: str) -> list[str]:
  """`argv` with `flag`'s value replaced (a flag is given once)."""
  at = argv.index(flag) + 1
  return argv[:at] + [value] + argv[at + 1:]


_MIXTURE = ("--config.data.mixture=(('paraphrase_en_human', 1), "
            "('paraphrase_en_ppdb_lexical', %d))")

CASES: dict[str, Case] = {
    # --- train: config files and keys -----------------------------------
    "config file missing": Case(
        lambda t: ["train", "--config", str(t / "nope.py"), "--workdir",
                   str(t / "out")], r"nope\.py: config file not found"),
    "config syntax error": Case(
        lambda t: ["train", "--config", _write(t, "c.py", "def get_config(:\n"),
                   "--workdir", str(t / "out")], r"c\.py.*line 1"),
    "config raises": Case(
        lambda t: ["train", "--config", _write(
            t, "c.py", "def get_config():\n  raise KeyError('x')\n"),
                   "--workdir", str(t / "out")], r"c\.py"),
    "config without get_config": Case(
        lambda t: ["train", "--config", _write(t, "c.py", "x = 1\n"),
                   "--workdir", str(t / "out")], r"c\.py: defines no get_config"),
    "unknown config key": Case(
        lambda t: _train(t, "--config.model.word_dimm=3"),
        r"unknown config key 'model\.word_dimm'.*Did you mean 'word_dim'"),
    "config value of the wrong type": Case(
        lambda t: _train(t, "--config.train_steps=many"),
        r"--config\.train_steps=many: not a value for train_steps"),
    "negative train_steps": Case(
        lambda t: _train(t, "--config.train_steps=-40"), r"train_steps"),
    "steps not a multiple of the megabatch": Case(
        lambda t: _train(t, "--config.train_steps=50"),
        r"train_steps.*multiples? of 40"),
    "unknown data task": Case(
        lambda t: _train(t, "--config.data.task=paraphrase_en_nothing"),
        r"paraflax tasks"),
    "workdir is a regular file": Case(
        lambda t: _train(t, workdir=_write(t, "file", "x")),
        r"file.*not a directory"),
    "workdir is read-only": Case(
        lambda t: _train(t, workdir=_read_only_dir(t)),
        r"ro/w.*(permission|writ)"),
    # --- embed ------------------------------------------------------------
    "embed: input missing": Case(
        lambda t: ["embed", "--workdir", _fake_workdir(t, "paraphrase"),
                   "--input", str(t / "none.txt"), "--output",
                   str(t / "out")], r"none\.txt: file not found"),
    "embed: input is a folder": Case(
        lambda t: ["embed", "--workdir", _fake_workdir(t, "paraphrase"),
                   "--input", str(t), "--output", str(t / "out")],
        r"is a directory"),
    "embed: empty input": Case(
        lambda t: ["embed", "--workdir", _fake_workdir(t, "paraphrase"),
                   "--input", _write(t, "in.txt", ""), "--output",
                   str(t / "out")], r"in\.txt: empty file"),
    "embed: invalid UTF-8": Case(
        lambda t: ["embed", "--workdir", _fake_workdir(t, "paraphrase"),
                   "--input", _write(t, "in.txt", b"ok\n\xff\xfe\n"),
                   "--output", str(t / "out")], r"in\.txt:2: invalid UTF-8"),
    "embed: empty line": Case(
        lambda t: ["embed", "--workdir", _fake_workdir(t, "paraphrase"),
                   "--input", _write(t, "in.txt", "a\n\nb\n"), "--output",
                   str(t / "out")],
        r"in\.txt: 1 empty line\(s\) at line 2\. Remove them: every line is a "
        r"sentence to embed\.$"),
    "embed: not a workdir": Case(
        lambda t: ["embed", "--workdir", str(t / "nowhere"), "--input",
                   _write(t, "in.txt", "a\n"), "--output", str(t / "out")],
        r"nowhere: not a paraflax workdir"),
    "embed: language the workdir lacks": Case(
        lambda t: ["embed", "--workdir", _fake_workdir(t, "paraphrase"),
                   "--input", _write(t, "in.txt", "a\n"), "--output",
                   str(t / "out"), "--lang", "de"], r"cannot embed 'de'"),
    "embed: NMT workdir": Case(
        lambda t: ["embed", "--workdir", _fake_workdir(t, "nmt"), "--input",
                   _write(t, "in.txt", "a\n"), "--output", str(t / "out")],
        r"does not embed sentences"),
    # --- mine -------------------------------------------------------------
    "mine: threshold nan": Case(lambda t: _mine(t, "--threshold", "nan"),
                                r"--threshold"),
    "mine: k zero": Case(lambda t: _mine(t, "--k", "0"), r"--k 0"),
    "mine: k above the target size": Case(
        lambda t: ["mine", "--src-emb", _emb(t, "x.f32", rows=9),
                   "--tgt-emb", _emb(t, "y.f32", rows=6), "--dim", "4",
                   "--output", str(t / "out"), "--k", "7"],
        r"y\.f32 has 6 embeddings"),
    "mine: no --dim, raw files": Case(
        lambda t: ["mine", "--src-emb", _raw_emb(t, "x.f32"), "--tgt-emb",
                   _raw_emb(t, "y.f32"), "--output", str(t / "out")],
        r"--dim is required: .*x\.f32 is a raw LASER file"),
    "mine: wrong --dim, raw files": Case(
        lambda t: ["mine", "--src-emb", _raw_emb(t, "x.f32"), "--tgt-emb",
                   _raw_emb(t, "y.f32"), "--dim", "5", "--output",
                   str(t / "out")], r"x\.f32.*not a whole number of rows"),
    "mine: wrong --dim": Case(lambda t: _with(_mine(t), "--dim", "5"),
        r"x\.f32 holds embeddings of dim 4 \(says .*x\.f32\.info\.json\), "
        r"not 5"),
    "mine: texts shorter than embeddings": Case(
        lambda t: _mine(t, "--src-text", _write(t, "x.txt", "a\nb\n"),
                        "--tgt-text", _write(t, "y.txt", "a\nb\n")),
        r"x\.txt has 2 lines"),
    "mine: workdir and embedding files": Case(
        lambda t: _mine(t, "--workdir", str(t)), r"not both"),
    "mine: embeddings missing": Case(
        lambda t: ["mine", "--src-emb", str(t / "x.f32"), "--tgt-emb",
                   str(t / "y.f32"), "--dim", "4", "--output",
                   str(t / "out")], r"x\.f32: embedding file not found"),
    "mine: block zero": Case(lambda t: _mine(t, "--block", "0"), r"--block"),
    "mine: nprobe zero": Case(
        lambda t: _mine(t, "--backend", "faiss", "--faiss-index", "ivf",
                        "--nprobe", "0"), r"--nprobe"),
    "mine: output is a folder": Case(
        lambda t: _mine(t)[:-1] + [_folder(t, "d")], r"d: is a directory",
        outputs=()),
    # --- translate / backtranslate ----------------------------------------
    "translate: beam zero": Case(
        lambda t: ["translate", "--workdir", _fake_workdir(t, "nmt"),
                   "--input", _write(t, "in.txt", "a\n"), "--output",
                   str(t / "out"), "--beam", "0"], r"--beam 0"),
    "translate: paraphrase workdir": Case(
        lambda t: ["translate", "--workdir", _fake_workdir(t, "paraphrase"),
                   "--input", _write(t, "in.txt", "a\n"), "--output",
                   str(t / "out")], r"'paraphrase' model.*'nmt'"),
    "backtranslate: nbest above beam": Case(
        lambda t: ["backtranslate", "--workdir", _fake_workdir(t, "nmt"),
                   "--output", str(t / "out"), "--beam", "2", "--nbest",
                   "3", "--task", "bitext_multi30k_de_en"],
        r"nbest <= beam"),
    "backtranslate: no input": Case(
        lambda t: ["backtranslate", "--workdir", _fake_workdir(t, "nmt"),
                   "--output", str(t / "out")], r"--task.*--src"),
    "backtranslate: ragged files": Case(
        lambda t: ["backtranslate", "--workdir", _fake_workdir(t, "nmt"),
                   "--output", str(t / "out"), "--src",
                   _write(t, "s.txt", "a\nb\n"), "--ref",
                   _write(t, "r.txt", "a\n")], r"s\.txt.*r\.txt|r\.txt.*s\.txt"),
    "backtranslate: unknown task": Case(
        lambda t: ["backtranslate", "--workdir", _fake_workdir(t, "nmt"),
                   "--output", str(t / "out"), "--task", "bitext_nothing"],
        r"bitext_nothing"),
    # --- score-paraphrases and filtered back-translations ----------------
    "export-pairs: a bitext task": Case(
        lambda t: ["export-pairs", "--task", "bitext_multi30k_de_en",
                   "--output", str(t / "out")],
        r"'bitext_multi30k_de_en' is not a paraphrase Task"),
    "export-pairs: unknown task": Case(
        lambda t: ["export-pairs", "--task", "paraphrase_en_nothing",
                   "--output", str(t / "out")],
        r"'paraphrase_en_nothing' is not a paraphrase Task.*paraflax tasks"),
    "score-paraphrases: not JSON": Case(
        lambda t: _score(t, _BT, "nope"), r"bt\.jsonl:2: not JSON",
        outputs=("out", "out.meta.json")),
    "score-paraphrases: no translation": Case(
        lambda t: _score(t, _BT, {"reference": "a", "cost": 1.0}),
        r"bt\.jsonl:2: record lacks \['translation'\]\. Score the output of "
        r"`paraflax backtranslate`", outputs=("out", "out.meta.json")),
    "score-paraphrases: no cost": Case(
        lambda t: _score(t, {"reference": "a", "translation": "b"}),
        r"bt\.jsonl:1: record lacks \['cost'\]",
        outputs=("out", "out.meta.json")),
    "score-paraphrases: empty line": Case(
        lambda t: _score(t, _BT, "", _BT), r"bt\.jsonl:2: empty line",
        outputs=("out", "out.meta.json")),
    "score-paraphrases: classifier workdir missing": Case(
        lambda t: [*_score(t, _BT), "--classifier-workdir", str(t / "nope")],
        r"nope: no such directory\. Train a classifier there first: "
        r"paraflax train --config configs/ref_classifier\.py:avg",
        outputs=("out", "out.meta.json")),
    "score-paraphrases: classifier workdir of another recipe": Case(
        lambda t: [*_score(t, _BT), "--classifier-workdir",
                   _fake_workdir(t, "paraphrase")],
        r"holds a 'paraphrase' model; this command needs a 'ref_classifier' "
        r"workdir", outputs=("out", "out.meta.json")),
    "score-paraphrases: classifier workdir never trained": Case(
        lambda t: [*_score(t, _BT), "--classifier-workdir",
                   _fake_workdir(t, "ref_classifier")],
        r"w: no vocab\.txt and no checkpoint; train the classifier first",
        outputs=("out", "out.meta.json")),
    "score-paraphrases: LM file missing": Case(
        lambda t: [*_score(t, _BT), "--lm", str(t / "nope.lm")],
        r"nope\.lm: no such LM file \(--lm\); train one with paraflax "
        r"train-lm", outputs=("out", "out.meta.json")),
    "score-paraphrases: a text file as LM": Case(
        lambda t: [*_score(t, _BT), "--lm", _text(t, "refs.txt", "a b\n")],
        r"refs\.txt: not a KenLM language model \(ARPA or binary\)",
        outputs=("out", "out.meta.json")),
    "train-lm: input missing": Case(
        lambda t: ["train-lm", "--input", str(t / "refs.txt"), "--output",
                   str(t / "out")], r"refs\.txt: file not found",
        outputs=("out", "out.meta.json")),
    "train-lm: only empty lines": Case(
        lambda t: ["train-lm", "--input", _text(t, "refs.txt", "\n \n"),
                   "--output", str(t / "out")],
        r"refs\.txt: no sentence to train a language model on",
        outputs=("out", "out.meta.json")),
    "analyze-backtranslations: not JSON": Case(
        lambda t: _analyze(t, _SCORED, "nope"), r"bt\.jsonl:2: not JSON"),
    "analyze-backtranslations: no rank": Case(
        lambda t: _analyze(t, {"reference": "a", "translation": "b"}),
        r"bt\.jsonl:1: record lacks \['rank'\]\. Analyze the output of "
        r"`paraflax score-paraphrases`"),
    "analyze-backtranslations: translation not a string": Case(
        lambda t: _analyze(t, _SCORED, {**_SCORED, "translation": 3}),
        r"bt\.jsonl:2: field 'translation' is 3, not a string"),
    "analyze-backtranslations: ref_prob on some records only": Case(
        lambda t: _analyze(t, _SCORED_P, {**_SCORED, "id": 1}),
        r"bt\.jsonl:2: no scores\.ref_prob, unlike the first 1-best "
        r"record"),
    "analyze-backtranslations: no 1-best record": Case(
        lambda t: _analyze(t, {**_SCORED, "rank": 1}),
        r"bt\.jsonl: no 1-best \(rank 0\) record"),
    "analyze-backtranslations: file missing": Case(
        lambda t: ["analyze-backtranslations", "--input",
                   str(t / "bt.jsonl"), "--output", str(t / "out")],
        r"bt\.jsonl: file not found"),
    "train: ref_classifier without data.input": Case(
        lambda t: ["train", "--config", f"{REF_CLASSIFIER}:avg", "--workdir",
                   str(t / "out")], r"data\.input is not set"),
    "train: ref_classifier input missing": Case(
        lambda t: ["train", "--config", f"{REF_CLASSIFIER}:lstm",
                   "--workdir", str(t / "out"),
                   f"--config.data.input={t / 'nope.jsonl'}"],
        r"data\.input=\S*nope\.jsonl: no such file\. Give the "
        r"back-translation JSONL"),
    "train: ref_classifier input without rank": Case(
        lambda t: ["train", "--config", f"{REF_CLASSIFIER}:avg", "--workdir",
                   str(t / "out"), "--config.data.input=" + _jsonl(
                       t, {k: v for k, v in _BT.items() if k != "rank"})],
        r"bt\.jsonl:1: record lacks \['rank'\]\. Give the output of "
        r"`paraflax backtranslate`"),
    "train: filter on an unknown score": Case(
        lambda t: _train_filtered(t, "{'score': 'ppl', 'lo': 0, 'hi': 1}",
                                  _SCORED),
        r"the score is one of length, cost, cost_token, overlap_1, "
        r"overlap_2, overlap_3, bleu, ref_prob, lm_ppl, random"),
    "train: filter with lo above hi": Case(
        lambda t: _train_filtered(t, "{'score': 'bleu', 'lo': 0.5, 'hi': 0.2}",
                                  _SCORED), r"lo 0\.5 > hi 0\.2"),
    "train: filter keeps fewer than max_pairs": Case(
        lambda t: _train_filtered(t, "{'score': 'length', 'lo': 0, 'hi': 9}",
                                  _SCORED, {**_SCORED, "id": 1}, max_pairs=3),
        r"bt\.jsonl: data\.filter length in \[0, 9\] keeps 2 pairs, fewer "
        r"than data\.max_pairs=3"),
    "train: filter on an unscored file": Case(
        lambda t: _train_filtered(t, "{'score': 'bleu', 'lo': 0, 'hi': 1}",
                                  _BT),
        r"bt\.jsonl:1: the record has no scores\.bleu.*paraflax "
        r"score-paraphrases"),
    "train: word vectors not exported yet": Case(
        lambda t: _train(t, f"--config.model.word_vectors={t}/nope.txt"),
        r"nope\.txt': no such file.*paraflax export-words"),
    "train: data.mixture and data.task both set": Case(
        lambda t: _train(t, _MIXTURE % 1),
        r"data\.mixture=.*data\.task.*--config\.data\.task="),
    "train: data.mixture rate of 0": Case(
        lambda t: _train(t, "--config.data.task=", _MIXTURE % 0),
        r"data\.mixture\[1\]=\('paraphrase_en_ppdb_lexical', 0\): each "
        r"member is \(Task, rate\) with a rate > 0"),
    "train: data.mixture of an unknown Task": Case(
        lambda t: _train(t, "--config.data.task=", "--config.data.mixture="
                         "(('paraphrase_en_nothing', 1),)"),
        r"data\.mixture\[0\]: 'paraphrase_en_nothing' is not a registered "
        r"Task.*paraflax tasks"),
    "train: filter on a catalogued Task": Case(
        lambda t: _train(t, "--config.data.max_pairs=10"),
        r"data\.task='paraphrase_en_human' is not one"),
    # --- bilingual scoring --------------------------------------------------
    "score-pairs: line without a tab": Case(
        lambda t: ["score-pairs", "--workdir", _fake_workdir(t, "bilingual"),
                   "--input", _write(t, "p.tsv", "a\tb\nc d\n"), "--output",
                   str(t / "out"), "--src-lang", "de", "--tgt-lang", "en"],
        r"p\.tsv.*(line 2|:2)"),
    "score-pairs: two non-English languages": Case(
        lambda t: ["score-pairs", "--workdir", _fake_workdir(t, "bilingual"),
                   "--input", _write(t, "p.tsv", "a\tb\n"), "--output",
                   str(t / "out"), "--src-lang", "de", "--tgt-lang", "fr"],
        r"--src-lang de --tgt-lang fr"),
    "score-pairs: a language the workdir lacks": Case(
        lambda t: ["score-pairs", "--workdir", _fake_workdir(
            t, "bilingual", lang="de", direction="xx_en"), "--input",
                   _write(t, "p.tsv", "a\tb\n"), "--output", str(t / "out"),
                   "--src-lang", "fr", "--tgt-lang", "en"],
        r"model of de and en: set --src-lang / --tgt-lang to de or en"),
    "backtranslate: empty line": Case(
        lambda t: ["backtranslate", "--workdir", _fake_workdir(t, "nmt"),
                   "--output", str(t / "out"), "--src",
                   _write(t, "s.txt", "a\n\n"), "--ref",
                   _write(t, "r.txt", "a\nb\n")],
        r"s\.txt line 2\. .*or pass --empty-lines drop"),
    "align-eval: files of different lengths": Case(
        lambda t: ["align-eval", "--workdir", _fake_workdir(t, "bilingual"),
                   "--src", _write(t, "s.txt", "a\nb\n"), "--tgt",
                   _write(t, "r.txt", "a\n"), "--src-lang", "de",
                   "--tgt-lang", "en", "--output", str(t / "out")],
        r"s\.txt|r\.txt"),
    # --- files of other commands ---------------------------------------------
    "pair-stats: not JSON": Case(
        lambda t: ["pair-stats", _write(t, "bt.jsonl", "{\"id\": 1}\nnope\n"),
                   "--json", str(t / "out")], r"bt\.jsonl:\d"),
    "pair-stats: file missing": Case(
        lambda t: ["pair-stats", str(t / "bt.jsonl"), "--json",
                   str(t / "out")], r"bt\.jsonl: file not found"),
    "mining-set: no gold pairs": Case(
        lambda t: ["mining-set", "--lang", "de", "--split", "dev",
                   "--output", str(t / "out"), "--gold", "0"], r"--gold"),
    "mining-eval: folder missing": Case(
        lambda t: ["mining-eval", "--dev", str(t / "dev"), "--test",
                   str(t / "test"), "--dev-src-emb", "a", "--dev-tgt-emb",
                   "b", "--test-src-emb", "c", "--test-tgt-emb", "d",
                   "--dim", "4", "--output", str(t / "out")], r"dev"),
    "select-domain: empty in-domain file": Case(
        lambda t: _select(t, indomain="\n"), r"in\.txt: no sentence"),
    "select-domain: general files of different line counts": Case(
        lambda t: _select(t, de="x\n" * 4),
        r"g\.de has 4 lines but .*g\.en has 5 lines.*Line 5"),
    "select-domain: empty line in the general bitext": Case(
        lambda t: _select(t, en="d e\n\n" + "d e\n" * 3),
        r"g\.en line 2\. Remove that row from both files"),
    "select-domain: more bins than sentences": Case(
        lambda t: _with(_select(t), "--bins", "4"),
        r"more bins than sentences"),
    "select-domain: English as the source": Case(
        lambda t: _with(_select(t), "--src-lang", "en"), r"--src-lang"),
    "eval-domain: not a selection": Case(
        lambda t: ["eval-domain", "--select-dir", str(t), "--test",
                   str(t / "test.txt"), "--output", str(t / "out")],
        r"summary\.json: not found"),
    "tasks: not a selection": Case(
        lambda t: ["tasks", "--select-dir", str(t)],
        r"summary\.json: not found", outputs=()),
    "eval-sts: NMT workdir": Case(
        lambda t: ["eval-sts", "--workdir", _fake_workdir(t, "nmt")],
        r"'nmt' model", outputs=()),
}


def _leftovers(tmp: pathlib.Path) -> list[str]:
  return [p.name for p in tmp.rglob("*") if p.name.startswith(".tmp-")
          or p.name.endswith(".parts")]


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input_gets_a_message_and_leaves_nothing(name, tmp_path, capsys):
  case = CASES[name]
  if name == "workdir is read-only" and os.geteuid() == 0:
    pytest.skip("root writes into read-only folders")
  argv = case.argv(tmp_path)
  assert cli.main(argv) == cli.EXIT_BAD_INPUT
  err = capsys.readouterr().err
  assert "Traceback" not in err
  assert err.startswith(f"paraflax {argv[0]}: error: "), err
  assert re.search(case.message, err, re.S), err
  for output in case.outputs:
    assert not (tmp_path / output).exists()
  assert not _leftovers(tmp_path)


def test_override_on_a_command_without_config(capsys):
  with pytest.raises(SystemExit) as e:
    cli.main(["embed", "--workdir", "w", "--input", "i", "--output", "o",
              "--config.k=1"])
  assert e.value.code == cli.EXIT_BAD_INPUT
  assert "unrecognized arguments: --config.k=1" in capsys.readouterr().err
