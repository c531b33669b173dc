"""How good is a paraphrase table: agreement with PPDB, n-gram coverage.

Agreement (the issue's evaluation 3): for every single word e1 of the
table that PPDB's lexical pairs know, its single-word paraphrases are
ranked by one of the table's scores; precision at k = the share of the
top min(k, candidates) that PPDB lists as a paraphrase of e1 (either way
round), averaged over the words. Every ranking sees the same words and
the same candidates, so the rankings compare fairly.

Coverage (evaluation 2): the share of the 1- to 4-gram occurrences (and
distinct n-grams) of a test text that are an e1 of the table, in the
lowercased word tokens the tables use.
"""
from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable, Mapping, Sequence

import numpy as np

from paraflax import errors
from paraflax import files
from paraflax.data import paths
from paraflax.data import readers
from paraflax.data import words
from paraflax.domain import table

PPDB_FILE = ("ppdb_lexical",
             "ppdb-1.0-xxxl-lexical.extended.synonyms.uniquepairs.gz")
KS = (1, 5)
SCORE = "score"  # the table's score column, beside its named features


def load_ppdb(path: str | os.PathLike | None = None) -> dict[str, set[str]]:
  """word -> its PPDB paraphrases, both directions, lowercased."""
  rows, _ = readers.read_tsv(path or paths.data_path(*PPDB_FILE), fields=2)
  gold: dict[str, set[str]] = {}
  for a, b in rows:
    a, b = a.strip().lower(), b.strip().lower()
    gold.setdefault(a, set()).add(b)
    gold.setdefault(b, set()).add(a)
  return gold


def rankings(entries: Sequence[table.Entry]) -> list[str]:
  """The scores a table ranks by: its score column, then its features."""
  names = {k for e in entries for k in e.features}
  return [SCORE, *sorted(names)]


def _value(entry: table.Entry, name: str) -> float:
  return entry.score if name == SCORE else entry.features.get(name, 0.0)


def candidates(entries: Iterable[table.Entry], gold: Mapping[str, set[str]],
               shown: Collection[str] = ()
               ) -> tuple[dict[str, list[table.Entry]], set[str],
                          dict[str, list[table.Entry]]]:
  """One pass over a table: the evaluated words (single alphabetic e1 PPDB
  knows) with their single-word paraphrases, every e1, and the
  single-word paraphrases of the `shown` words (PPDB's or not)."""
  out: dict[str, list[table.Entry]] = {}
  e1s: set[str] = set()
  extra: dict[str, list[table.Entry]] = {}
  for e in entries:
    e1s.add(e.e1)
    if " " in e.e2:
      continue
    if e.e1 in shown:
      extra.setdefault(e.e1, []).append(e)
    if " " not in e.e1 and e.e1.isalpha() and e.e1 in gold:
      out.setdefault(e.e1, []).append(e)
  return out, e1s, extra


def ranked(es: Sequence[table.Entry], name: str) -> list[table.Entry]:
  return sorted(es, key=lambda e: (-_value(e, name), e.e2))


def precision(cands: Mapping[str, Sequence[table.Entry]],
              gold: Mapping[str, set[str]], name: str,
              ks: Sequence[int] = KS) -> dict[str, float]:
  hits = {k: [] for k in ks}
  for e1, es in cands.items():
    top = ranked(es, name)
    for k in ks:
      shown = top[:k]
      hits[k].append(sum(e.e2 in gold[e1] for e in shown) / len(shown))
  return {f"p@{k}": float(np.mean(h)) if h else 0.0 for k, h in hits.items()}


def ngrams(tokens: Sequence[str], n: int) -> Iterable[str]:
  return (" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def coverage(e1s: set[str], texts: Iterable[str], max_n: int = 4
             ) -> dict[str, dict[str, float]]:
  """Per n (and all): the share of n-gram occurrences and of distinct
  n-grams of `texts` that are in `e1s`."""
  seen = {n: {} for n in range(1, max_n + 1)}  # n-gram -> occurrences
  for text in texts:
    tokens = words.tokenize(text)
    for n in seen:
      for g in ngrams(tokens, n):
        seen[n][g] = seen[n].get(g, 0) + 1
  out = {}
  for label, grams in [*((str(n), seen[n]) for n in seen),
                       ("all", {(n, g): c for n in seen
                                for g, c in seen[n].items()})]:
    covered = [g for g in grams if (g[1] if isinstance(g, tuple) else g)
               in e1s]
    total = sum(grams.values())
    out[label] = {
        "tokens": sum(grams[g] for g in covered) / total if total else 0.0,
        "types": len(covered) / len(grams) if grams else 0.0,
        "ngrams": total}
  return out


def _markdown(report: dict, examples: dict[str, dict[str, list[str]]]
              ) -> str:
  lines = [f"# PPDB agreement of {report['table']}", "",
           f"{report['words']} single words of the table that PPDB knows "
           f"(of {report['table_e1']} e1); precision of the top k "
           "single-word paraphrases against PPDB.", "",
           "| ranking | " + " | ".join(f"P@{k}" for k in KS) + " |",
           "|---|" + "---|" * len(KS)]
  for name, p in report["precision"].items():
    lines.append(f"| {name} | " + " | ".join(
        f"{100 * p[f'p@{k}']:.1f}" for k in KS) + " |")
  for text, cov in report.get("coverage", {}).items():
    lines += ["", f"Coverage of {text} (share of n-gram occurrences / of "
              "distinct n-grams that are e1 of the table, %):", "",
              "| n | occurrences | distinct | n-grams |", "|---|---|---|---|"]
    lines += [f"| {n} | {100 * c['tokens']:.1f} | {100 * c['types']:.1f} | "
              f"{c['ngrams']} |" for n, c in cov.items()]
  lines += ["", "Examples (top 5 single-word paraphrases; * = in PPDB):", "",
            "| word | " + " | ".join(report["precision"]) + " |",
            "|---|" + "---|" * len(report["precision"])]
  for word, by_name in examples.items():
    lines.append(f"| {word} | " + " | ".join(
        ", ".join(by_name[n]) for n in report["precision"]) + " |")
  return "\n".join(lines) + "\n"


def _examples(cands, gold, names, chosen: Sequence[str]
              ) -> dict[str, dict[str, list[str]]]:
  return {w: {n: [e.e2 + ("*" if e.e2 in gold.get(w, ()) else "")
                  for e in ranked(cands.get(w, ()), n)[:5]] for n in names}
          for w in chosen}


def evaluate_file(table_path: str, output: str, ppdb: str | None = None,
                  examples: int = 20, words_shown: Sequence[str] | None = None,
                  coverage_texts: Sequence[str] | None = None,
                  overwrite: bool = False) -> dict:
  """`paraflax eval-ppdb`: OUT.json and OUT.md."""
  for suffix in (".json", ".md"):
    files.check_output(output + suffix)
  gold = load_ppdb(ppdb)
  cands, e1s, extra = candidates(table.iter_table(table_path), gold,
                                 set(words_shown or ()))
  if not cands:
    raise errors.DataError(f"{table_path}: no single-word e1 of the table is "
                           "in PPDB; nothing to evaluate.")
  names = rankings([e for es in cands.values() for e in es])
  report = {"table": table_path, "table_e1": len(e1s),
            "words": len(cands),
            "precision": {n: precision(cands, gold, n) for n in names}}
  if coverage_texts:
    report["coverage"] = {
        t: coverage(e1s, readers.read_lines(t, empty="drop")[0])
        for t in coverage_texts}
  pool = sorted(cands)
  chosen = list(words_shown or (
      pool[int(i)] for i in np.linspace(0, len(pool) - 1,
                                        min(examples, len(pool)))))
  shown = _examples({**cands, **extra}, gold, names, chosen)
  report["examples"] = shown
  markdown = _markdown(report, shown)
  files.write_all_once({output + ".json": json.dumps(report, indent=2) + "\n",
                        output + ".md": markdown}, overwrite=overwrite)
  print(markdown)
  return report
