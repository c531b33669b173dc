"""How in-domain a Moore-Lewis selection is (the fourth seed's Figure 3).

`write_domain_data` writes the evaluation's inputs: the in-domain English
(biomedical, or ABC science news) split into LM training, dev and test
text, and one general bitext made of every English-paired de/fr/cs bitext
of the data folder. `evaluate` trains
an `eval_order`-gram LM (the seed's 3-grams) on the top-diffCE sentences
of a `paraflax select-domain` folder at each size of `eval_sizes`, and on
as many sentences picked at random or by n-gram overlap with the
in-domain text (all three from the sentences outside the general LM's
sample), and measures each LM's perplexity on the in-domain test text.

The curve's LMs have their own order and closed vocabulary (the tokens
seen `eval_min_count` times in the selection's in-domain text), not the
selection's: perplexities over different vocabularies count different
events, so only a fixed evaluation compares selection settings
(`configs/domain.py` chose them on the dev text that way).
"""
from __future__ import annotations

import gzip
import heapq
import itertools
import logging
import json
import os
import sys
from collections.abc import Iterator

import ml_collections
import numpy as np

from paraflax import errors
from paraflax import files
from paraflax.data import corpora
from paraflax.data import paths
from paraflax.data import readers
from paraflax.domain import selection
from paraflax.filtering import lm

METHODS = ("moore_lewis", "random", "ngram_overlap")
_LABELS = {"moore_lewis": "top diffCE (Moore-Lewis)",
           "random": "random", "ngram_overlap": "n-gram overlap"}
SPLITS = {"dev": 9, "test": 0}  # line number % 10 -> split; else train
_PARACRAWL = tuple((f"paracrawl_human_eval/{v}.sorted.en-{l}", l)
                   for v in ("v3", "v6") for l in corpora.LANGS)
# (non-English file, English file, language)
_GENERALTEST = tuple(
    (f"generaltest2022/generaltest2022.{p}.{s}", f"generaltest2022/"
     f"generaltest2022.{p}.{e}", l) for p, s, e, l in (
         ("de-en", "src.de", "ref.A.en", "de"),
         ("cs-en", "src.cs", "ref.B.en", "cs"),
         ("en-de", "ref.A.de", "src.en", "de"),
         ("en-cs", "ref.B.cs", "src.en", "cs")))


def _bitexts() -> Iterator[tuple[str, str, str]]:
  """(non-English, English, language) rows of every English-paired
  bitext: the catalogue's, ParaCrawl's human-evaluation samples, WMT22's
  general test sets."""
  for corpus in corpora.BITEXT_CORPORA:
    for split in corpus.splits:
      columns = corpora.read(corpus, split)
      yield from ((x, e, corpus.pair[0]) for x, e in zip(*columns.values()))
  for name, lang in _PARACRAWL:
    rows, _ = readers.read_tsv(paths.data_path(name), fields=4,
                               allow_extra=True, empty="drop")
    yield from ((r[3], r[2], lang) for r in rows)
  for src, eng, lang in _GENERALTEST:
    rows, _ = readers.read_parallel(
        [paths.data_path(src), paths.data_path(eng)])
    yield from ((x, e, lang) for x, e in rows)


def _biomed() -> list[str]:
  return corpora.read(corpora.get("mono_en_biomed"), "train")["text"]


def _abc_science() -> list[str]:
  """ABC science news, which the catalogue leaves out for its encoding
  (corpora.py): a line that is not UTF-8 is read as Latin-1 (its degree
  signs), with a warning; CRs and empty lines are dropped."""
  path = paths.data_path("mono_en_domains", "abc_science.txt.gz")
  with gzip.open(path) as f:
    raw = [line.rstrip(b"\r\n") for line in f]
  lines, latin = [], 0
  for line in raw:
    try:
      text = line.decode("utf-8")
    except UnicodeDecodeError:
      text, latin = line.decode("latin-1"), latin + 1
    if text.strip():
      lines.append(text)
  logging.warning("%s: %d line(s) read as Latin-1, %d empty dropped", path,
                  latin, len(raw) - len(lines))
  return lines


# In-domain English by name: `paraflax domain-data --domain`.
DOMAINS = {"biomed": _biomed, "abc_science": _abc_science}


def write_domain_data(output: str, domain: str = "biomed",
                      overwrite: bool = False) -> dict:
  """`paraflax domain-data`: the in-domain split and the general bitext
  (paraflax/commands/domain.py says which lines go where). Returns the line
  counts."""
  split = {name: [] for name in ("train", *SPLITS)}
  for number, line in enumerate(DOMAINS[domain](), start=1):
    name = next((s for s, r in SPLITS.items() if number % 10 == r),
                "train")
    split[name].append(line + "\n")
  seen, rows, dropped = set(), [], 0
  for x, e, lang in _bitexts():
    x, e = x.strip(), e.strip()
    if not x or not e:
      dropped += 1
    elif e not in seen:
      seen.add(e)
      rows.append((x, e, lang))
  texts = {f"{domain}.{name}.en": "".join(lines)
           for name, lines in split.items()}
  texts.update({f"general.{ext}": "".join(r[k] + "\n" for r in rows)
                for k, ext in enumerate(("mul", "en", "langs"))})
  files.write_all_once({os.path.join(output, name): text
                        for name, text in texts.items()}, overwrite=overwrite)
  counts = {name: text.count("\n") for name, text in texts.items()}
  print(json.dumps({**counts, "general_rows_with_an_empty_side_dropped":
                    dropped}, indent=2))
  return counts


def _scores(folder: str) -> Iterator[tuple[int, float, int]]:
  """(0-based line, diffCE, bin) of each row of a selection's scores.tsv."""
  lines = readers.iter_lines(os.path.join(folder, "scores.tsv"))
  for row in itertools.islice(lines, 1, None):
    line, _, _, diff, number = row.split("\t")
    yield int(line) - 1, float(diff), int(number)


def _ngrams(tokens: list[str], order: int) -> Iterator[tuple[str, ...]]:
  for n in range(1, order + 1):
    yield from (tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def _overlap_ranking(folder: str, summary: dict, order: int, size: int
                     ) -> list[int]:
  """The `size` selectable lines with the largest share of n-grams (n <=
  `order`) found in the in-domain text, ties by line."""
  known = {g for line in readers.iter_lines(summary["in_domain"])
           for g in _ngrams(lm.sentence(line).split(), order)}

  def shares() -> Iterator[tuple[float, int]]:
    for (line, _, number), text in zip(
        _scores(folder), readers.iter_lines(summary["general_tgt"])):
      if number:
        grams = list(_ngrams(lm.sentence(text).split(), order))
        yield -sum(g in known for g in grams) / max(len(grams), 1), line
  return [line for _, line in heapq.nsmallest(size, shares())]


def _random_ranking(folder: str, selectable: int, size: int, seed: int
                    ) -> list[int]:
  """`size` selectable lines in a seeded random order."""
  picks = np.random.default_rng(seed).choice(selectable, size, replace=False)
  order = {int(p): k for k, p in enumerate(picks)}
  found = [0] * size
  rows = (line for line, _, number in _scores(folder) if number)
  for position, line in enumerate(rows):
    if position in order:
      found[order[position]] = line
  return found


def rankings(folder: str, summary: dict, config: ml_collections.ConfigDict
             ) -> dict[str, list[int]]:
  """Each method's first max(sizes) selectable lines (0-based), best
  first; the first n of them are its selection of size n."""
  size = max(config.eval_sizes)
  return {
      "moore_lewis": [line for _, line in heapq.nsmallest(
          size, ((d, line) for line, d, n in _scores(folder) if n))],
      "random": _random_ranking(folder, summary["selectable"], size,
                                config.eval_seed),
      "ngram_overlap": _overlap_ranking(folder, summary,
                                        config.overlap_order, size)}


def perplexity(model, sentences: list[str]) -> dict[str, float]:
  """KenLM's perplexity of the whole text (</s> counted; with a closed
  vocabulary a word the LM never saw gets the probability of each such
  word, `lm.train_lm`), the one without those words (SRILM's convention)
  and their rate."""
  total = known = 0.0
  tokens = oov = 0
  for text in sentences:
    for logp, _, unknown in model.full_scores(text, bos=True, eos=True):
      total += logp
      tokens += 1
      oov += unknown
      known += 0.0 if unknown else logp
  return {"perplexity": 10 ** (-total / tokens),
          "perplexity_no_oov": 10 ** (-known / max(tokens - oov, 1)),
          "oov_rate": oov / tokens}


def _plot(rows: list[dict], path: str) -> None:
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt  # pylint: disable=import-outside-toplevel
  figure, axis = plt.subplots(figsize=(6, 4))
  for method in METHODS:
    points = [(r["size"], r["perplexity"]) for r in rows
              if r["method"] == method]
    axis.plot(*zip(*points), marker="o", label=_LABELS[method])
  axis.set_xscale("log")
  sizes = sorted({r["size"] for r in rows})
  axis.set_xticks(sizes, [f"{s:,}" for s in sizes])
  axis.minorticks_off()
  axis.set_xlabel("selected general sentences")
  axis.set_ylabel("in-domain test perplexity")
  axis.legend()
  figure.tight_layout()
  with files.atomic_output(path) as f:
    figure.savefig(f, format="png", dpi=120)
  plt.close(figure)


def _markdown(rows: list[dict], summary: dict, test: str,
              config: ml_collections.ConfigDict) -> str:
  by = {(r["method"], r["size"]): r for r in rows}
  sizes = sorted({r["size"] for r in rows})
  lines = [f"# In-domain test perplexity of selected general sentences\n\n"
           f"Test: `{test}`. General: `{summary['general_tgt']}` "
           f"({summary['selectable']} selectable sentences). "
           f"Selection: {summary['settings']['order']}-gram LMs, "
           f"vocabulary min_count {summary['settings']['min_count']}. "
           f"Curve: {config.eval_order}-gram LMs with the vocabulary of "
           f"the words seen at least {config.eval_min_count} times in the "
           "in-domain text (0: open; any other word is one <oov> word), "
           + ("estimated with lmplz --vocab_pad at its size, so that each "
              "vocabulary word an LM never saw gets one share of its "
              "uniform distribution" if config.eval_vocab_pad else
              "estimated without lmplz --vocab_pad (eval_vocab_pad False): "
              "<unk> is one event for all the vocabulary words an LM never "
              "saw")
           + ". KenLM's perplexity with </s>; in brackets without the "
           "words the LM never saw.\n",
           "| sentences | " + " | ".join(_LABELS[m] for m in METHODS)
           + " | top diffCE / random | unseen tokens % (top diffCE / random) |",
           "|---|" + "---|" * (len(METHODS) + 2)]
  for size in sizes:
    cells = [f"{by[m, size]['perplexity']:.1f} "
             f"({by[m, size]['perplexity_no_oov']:.1f})" for m in METHODS]
    ratio = (by["moore_lewis", size]["perplexity"]
             / by["random", size]["perplexity"])
    oov = (f"{100 * by['moore_lewis', size]['oov_rate']:.1f} / "
           f"{100 * by['random', size]['oov_rate']:.1f}")
    lines.append(f"| {size} | " + " | ".join(cells) + f" | {ratio:.3f} | "
                 f"{oov} |")
  return "\n".join(lines) + "\n"


def evaluate(select_dir: str, test: str, output: str,
             config: ml_collections.ConfigDict,
             overwrite: bool = False) -> list[dict]:
  """`paraflax eval-domain`: one row per method and size, also in
  OUTPUT/results.json, results.md and perplexity.png."""
  summary_path = os.path.join(select_dir, selection.SUMMARY)
  if not os.path.isfile(summary_path):
    raise errors.DataError(f"{summary_path}: not found; --select-dir must be "
                           "a finished `paraflax select-domain` output.")
  with open(summary_path, encoding="utf-8") as f:
    summary = json.load(f)
  sizes = sorted(config.eval_sizes)
  if not sizes or sizes[0] < 1 or sizes[-1] > summary["selectable"]:
    raise errors.ConfigError(
        f"--config.eval_sizes={list(config.eval_sizes)}: give sizes from 1 "
        f"to {summary['selectable']}, the selectable sentences of "
        f"{select_dir}.")
  vocabulary = (lm.vocabulary(summary["in_domain"], config.eval_min_count)
                if config.eval_min_count > 0 else None)
  sentences = [lm.sentence(line, vocabulary) for line in readers.read_lines(
      test, empty="drop", fix="Empty lines are dropped.")[0]]
  settings = {"scores": lm.sha256(os.path.join(select_dir, "scores.tsv")),
              "test": lm.sha256(test),
              **{k: config[k] for k in ("eval_sizes", "eval_seed",
                                        "overlap_order", "eval_order",
                                        "eval_min_count", "eval_vocab_pad")}}
  files.claim_output(output, settings, overwrite=overwrite)
  ranked = rankings(select_dir, summary, config)
  wanted = {line for lines in ranked.values() for line in lines}
  texts = {i: line for i, line in
           enumerate(readers.iter_lines(summary["general_tgt"]))
           if i in wanted}
  rows = []
  for method, size in itertools.product(METHODS, sizes):
    name = os.path.join(output, f"{method}_{size}")
    files.write_once(name + ".en", "".join(
        texts[i] + "\n" for i in ranked[method][:size]), overwrite=overwrite)
    lm.train_lm(name + ".en", name + ".lm", order=config.eval_order,
                memory=summary["settings"]["memory"],
                discount_fallback=summary["settings"]["discount_fallback"],
                vocabulary=vocabulary, vocab_pad=config.eval_vocab_pad)
    rows.append({"method": method, "size": size,
                 **perplexity(lm.load(name + ".lm"), sentences)})
    print(f"eval-domain: {method} {size}: perplexity "
          f"{rows[-1]['perplexity']:.1f}", file=sys.stderr)
  _plot(rows, os.path.join(output, "perplexity.png"))
  table = _markdown(rows, summary, test, config)
  files.write_text_atomic(os.path.join(output, "results.md"), table)
  files.write_text_atomic(os.path.join(output, "results.json"), json.dumps(
      # The folders as the command named them: a result file that names
      # this machine's paths is not one another machine compares with.
      {"select_dir": select_dir, "test": test,
       "test_sentences": len(sentences), "rows": rows}, indent=2) + "\n")
  print(table)
  return rows
