"""The full evaluation of one bilingual workdir (Kim et al. 2019), for
`paraflax eval-bilingual`: alignment recovery on every test set of its
language pair, ParaCrawl filtering against human labels beside the bundled
filters, and the cosine vs MLP score distributions as PNGs.
"""
from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from scipy import special

from paraflax import errors
from paraflax import files
from paraflax.evaluation import alignment
from paraflax.evaluation import paracrawl

REPORT = "bilingual_eval.json"
Embed = Callable[[Sequence[str], str], np.ndarray]


@dataclasses.dataclass(frozen=True)
class Encoders:
  """A bilingual workdir's encoders, ready to embed `lang` and English."""
  workdir: str
  embed: Embed
  lang: str  # the non-English language
  step: int  # checkpoint step


def cached(embed: Embed) -> Embed:
  """`embed` computed once per (texts, language): the ParaCrawl sides are
  scored by every similarity and drawn again for the plots."""
  seen: dict[tuple[str, tuple[str, ...]], np.ndarray] = {}

  def run(texts: Sequence[str], lang: str) -> np.ndarray:
    key = (lang, tuple(texts))
    if key not in seen:
      seen[key] = embed(texts, lang)
    return seen[key]

  return run


def plot_path(workdir: str, release: str, lang: str) -> str:
  return os.path.join(workdir, f"paracrawl_{release}_{lang}.png")


def evaluate(enc: Encoders, similarities: Mapping[str, Mapping],
             *, seed: int = 0, data: Sequence[str] = (), dev: str = ""
             ) -> dict:
  """Both tables as rows, and a plot per ParaCrawl release when both cosine
  and mlp are among `similarities` (the MLP drawn as a probability); the
  alignment table over the bundled test sets of the language but the one
  that is the workdir's dev set `dev`, and the bitext `data` names (data
  specs, kept apart from `dev` by the caller), ParaCrawl's where it has
  the language."""
  embed = cached(enc.embed)
  bundled, left_out = alignment.test_sets(enc.lang, dev)
  sets = [*bundled, *data]
  if not sets:
    raise errors.ConfigError(
        f"no alignment test set for {enc.lang}-en is bundled: name your own "
        "with --data SPEC (tsv:FILE or lines:SRC,EN; docs/your-data.md).")
  crawled = enc.lang in paracrawl.LANGS
  report = {
      "workdir": enc.workdir, "lang": enc.lang,
      "checkpoint_step": enc.step, "similarities": sorted(similarities),
      "dev": dev, "left_out": left_out,
      "alignment": alignment.evaluate(embed, enc.lang, similarities, sets,
                                      seed=seed),
      "paracrawl": paracrawl.evaluate_all(embed, similarities,
                                          langs=(enc.lang,))
                   if crawled else [],
      "plots": []}
  if {"cosine", "mlp"} <= set(similarities) and crawled:
    for release in paracrawl.RELEASES:
      sample = paracrawl.load(release, enc.lang)
      scores = paracrawl.score_sample(
          embed, enc.lang, sample,
          {"cosine": {}, "mlp": similarities["mlp"]})
      path = plot_path(enc.workdir, release, enc.lang)
      paracrawl.plot_distributions(
          path, {"cosine": scores["cosine"],
                 "MLP probability": special.expit(scores["mlp"])},
          sample.valid, title=f"ParaCrawl {release} {enc.lang}-en: "
          f"{os.path.basename(enc.workdir)}, step {enc.step}")
      report["plots"].append(path)
  return report


def write(report: dict) -> str:
  path = os.path.join(report["workdir"], REPORT)
  files.write_text_atomic(path, json.dumps(report, indent=2) + "\n")
  return path


def format_report(report: dict) -> str:
  """The alignment table; ParaCrawl's, or a line where it has no set of
  the language."""
  crawled = (["ParaCrawl: V vs the rest",
              paracrawl.format_table(report["paracrawl"])]
             if report["paracrawl"] else
             [f"ParaCrawl: no human-judged ParaCrawl set for "
              f"{report['lang']}-en (the bundled ones: "
              f"{', '.join(f'{l}-en' for l in paracrawl.LANGS)})"])
  return "\n".join([
      f"alignment recovery error % ({report['lang']}-en, checkpoint step "
      f"{report['checkpoint_step']})",
      alignment.format_table(report["alignment"]),
      *alignment.left_out_lines(report.get("left_out", ()),
                                report.get("dev", "")), "", *crawled,
      *(f"plot: {p}" for p in report["plots"])])
