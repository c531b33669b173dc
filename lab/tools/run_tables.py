"""Results tables computed from the runs' own output files
(`lab/tools/run_results.py`: lab/results/runs/<table>/<name>.json).

A table's definition, lab/tables/<table>.json, lists its rows; each row
is computed from a run's kept output (`"from"`: a key of ROWS; a row of
gran_ablations.json names a kept sweep), none is typed. Definitions are written by hand, so they sit apart from
lab/results/, whose files only scripts write.
"""
from __future__ import annotations

import ast
import functools
import json
import os
import re
import sys
from typing import Any, Callable

import markdown_table
import quoted
import run_results

RESULTS = os.path.join(run_results.ROOT, "lab", "results")
DEFINITIONS = os.path.join(run_results.ROOT, "lab", "tables")


def _table(name: str) -> dict:
  with open(os.path.join(DEFINITIONS, name + ".json"),
            encoding="utf-8") as f:
    return json.load(f)


def _x100(r: float | None) -> str:
  return "" if r is None else f"{100 * r:.2f}"


# --- what an output holds, in words ---------------------------------------

_SELECT = {"dev/bleu": ("dev BLEU", 1), "dev/align_accuracy":
           ("dev alignment accuracy", 1),
           "sts/STSb.dev-tuning/pearson": ("STSb dev-tuning", 100)}


def _best(stage: dict) -> str:
  name, scale = _SELECT.get(stage["select"], (stage["select"], 1))
  return f"{name} {scale * stage['best']:.2f}"


def _sts(sts: dict) -> str:
  return (f"STS12-15 mean {_x100(sts['semeval_2012_2015']['mean_pearson'])}"
          f", STSb test {_x100(sts['datasets']['STSb.test']['pearson'])}")


def _mined(mining: dict) -> str:
  test = mining["test"]
  return (f"{mining['margin']} margin, {mining['retrieval']} retrieval at "
          f"the dev threshold {mining['threshold']:.4f}: precision "
          f"{_x100(test['precision'])}, recall {_x100(test['recall'])}, F1 "
          f"{_x100(test['f1'])}")


def _code(text: str) -> str:
  return f"`{text}`" if text else ""


def _report(ref: str) -> dict:
  return run_results.load(ref).data


# --- the tiny pipeline --------------------------------------------------------

PIPELINE = "pipeline_tiny/tiny"


def pipeline_tiny() -> list[str]:
  """The tiny pipeline's report (report.json), stage by stage."""
  r = _report(PIPELINE)
  score, m = r["score"], r["mining"]
  test = m["benchmarks"]["test"]
  shown = m["sample"]
  rows = [
      ("nmt", f"{_best(r['nmt'])} after {r['nmt']['steps']:,} steps"),
      ("backtranslate, score",
       f"{r['backtranslate']['sentences']:,} sentences into "
       f"{r['backtranslate']['records']:,} "
       f"{r['backtranslate']['records'] // r['backtranslate']['sentences']}"
       f"-best records; {score['pairs']:,} "
       f"1-best pairs kept by `{score['filter']['score']}` in "
       f"[{score['filter']['lo']}, {score['filter']['hi']}]"),
      ("words", f"PPDB word vectors ({r['words']['steps']:,} updates): "
       f"{_best(r['words'])} as an Avg encoder"),
      ("gran, sts", f"from those words, on the kept pairs "
       f"({r['gran']['steps']:,} updates): {_best(r['gran'])}, "
       f"{_sts(r['sts'])}"),
      ("bilingual", f"{_best(r['bilingual'])} % after "
       f"{r['bilingual']['steps']:,} steps"),
      ("mining", f"`{test['built_by']}`: {test['gold']:,} gold pairs among "
       f"{test['src']:,} sentences a side; {_mined(m)}; "
       f"{sum(p['gold'] for p in shown)} of the {len(shown)} best-scored "
       "pairs correct"),
  ]
  return markdown_table.table(["stage", "result"], rows)


_LANGS = {"de": "German", "fr": "French", "cs": "Czech", "ru": "Russian"}


def pipeline_tiny_mined() -> list[str]:
  """Its best-scored mined test pairs with their gold marks."""
  report = _report(PIPELINE)
  rows = [(f"{p['score']:.4f}", p["src"], p["tgt"],
           "correct" if p["gold"] else "wrong")
          for p in report["mining"]["sample"]]
  source = _LANGS.get(report["lang"], report["lang"])
  return markdown_table.table(["score", source, "English", "gold"], rows)


# --- rows computed from a run, by the kind of row ---------------------------

def _sts_row(spec: dict, columns) -> list:
  """sts_encoders: one encoder's eval-sts of its best checkpoint."""
  run = run_results.load(spec["run"])
  d = run.data
  groups = [_x100(d["groups"][g]["mean_pearson"])
            for g in ("STS12", "STS13", "STS14", "STS15")]
  return [spec["model"], _code(run.about["config"]), run.about["hardware"],
          f"{d['checkpoint_step']:,}", *groups,
          _x100(d["semeval_2012_2015"]["mean_pearson"]),
          _x100(d["datasets"]["STSb.dev"]["pearson"]),
          _x100(d["datasets"]["STSb.test"]["pearson"]),
          _x100(d["datasets"]["SICK.train"]["pearson"])][:len(columns)]


def _sts_headline(spec: dict, columns) -> list:
  """headline: eval-sts of one config's runs, one per seed."""
  runs = {label: run_results.load(ref) for label, ref in spec["runs"].items()}
  first = next(iter(runs.values()))
  result = "; ".join(f"{_sts(r.data)} ({label})" for label, r in runs.items())
  return [spec["method"], _code(first.about["config"]),
          first.about["hardware"],
          first.about["time"], result][:len(columns)]


def _pipeline_headline(spec: dict, columns) -> list:
  run = run_results.load(spec["run"])
  m = run.data["mining"]
  result = (f"GRAN {_sts(run.data['sts'])}; mining "
            f"{m['benchmarks']['test']['gold']:,} gold pairs: F1 "
            f"{_x100(m['test']['f1'])}")
  return [spec["method"], _code(run.about["config"]), run.about["hardware"],
          run.about["time"], result][:len(columns)]


def _mining_row(rows: list[dict], margin: str, retrieval: str) -> dict:
  """The row of one margin and retrieval among a mining table's rows."""
  return next(r for r in rows if (r["margin"], r["retrieval"]) ==
              (margin, retrieval))


def _mining_eval_row(file: str, margin: str, retrieval: str) -> dict:
  """The row of one margin and retrieval of a `paraflax mining-eval` output."""
  with open(os.path.join(run_results.ROOT, file), encoding="utf-8") as f:
    return _mining_row(json.load(f)["rows"], margin, retrieval)


def _mining_headline(spec: dict, columns) -> list:
  """headline: `paraflax mining-eval`'s row of one margin and retrieval."""
  row = _mining_eval_row(spec["file"], spec["margin"], spec["retrieval"])
  return [spec["method"], spec["config"], spec["hardware"],
          _with_values(spec["time"]),
          f"test F1 {100 * row['test_f1']:.1f} ({spec['margin']} margin, "
          f"{spec['retrieval']} retrieval)"][:len(columns)]


VALUE_REF = re.compile(r"\{([\w./-]+)\}")


def _with_values(cell: str) -> str:
  """`cell` with each {NAME} replaced by VALUES[NAME], read from its files."""
  return VALUE_REF.sub(lambda m: VALUES[m.group(1)](), cell)


def _valued(spec: dict, columns) -> list:
  """Cells whose {NAME}s are VALUES, read from the files behind them."""
  del columns
  return [_with_values(c) for c in spec["cells"]]


def _over_random(run: run_results.Run) -> dict[int, float]:
  """eval-domain: top diffCE's test perplexity over random's, by size."""
  ppl = {(r["method"], r["size"]): r["perplexity"] for r in run.data["rows"]}
  return {n: p / ppl[("random", n)] for (m, n), p in ppl.items()
          if m == "moore_lewis"}


def _domain_headline(spec: dict, columns) -> list:
  """headline: eval-domain's top diffCE against random at one size."""
  run = run_results.load(spec["run"])
  n = spec["size"]
  return [spec["method"], _code(run.about["config"]), run.about["hardware"],
          run.about["time"], f"perplexity of the {n:,} selected sentences' "
          f"LM {_over_random(run)[n]:.3f}x that of {n:,} random ones"
          ][:len(columns)]


def _bleu_headline(spec: dict, columns) -> list:
  """headline: `paraflax eval --only dev_all` of an NMT workdir."""
  run = run_results.load(spec["run"])
  return [spec["method"], _code(run.about["config"]), run.about["hardware"],
          run.about["time"], f"newstest2013 BLEU "
          f"{run.data['dev_all']['bleu']:.2f}"][:len(columns)]


def _domain_preset(spec: dict, columns) -> list:
  """paper_presets: a selection's curve at its smallest and largest size."""
  run = run_results.load(spec["run"])
  ratio = _over_random(run)
  lo, hi = min(ratio), max(ratio)
  return [spec["paper"], spec["config"], spec["cut"], run.about["time"],
          f"top diffCE / random test perplexity {ratio[lo]:.3f} at {lo:,} "
          f"sentences, {ratio[hi]:.3f} at {hi:,}"][:len(columns)]


def _sts_preset(spec: dict, columns) -> list:
  """paper_presets: an encoder's eval-sts after the cut's updates."""
  run = run_results.load(spec["run"])
  return [spec["paper"], spec["config"], spec["cut"], run.about["time"],
          _sts(run.data)][:len(columns)]


def _bilingual_preset(spec: dict, columns) -> list:
  """paper_presets: `paraflax eval` of a bilingual workdir: its dev
  alignment accuracy and one test set's alignment error."""
  run = run_results.load(spec["run"])
  d = run.data
  test = next(r for r in d["tests"]["rows"] if (r["set"], r["similarity"])
              == (spec["set"], spec["similarity"]))
  return [spec["paper"], spec["config"], spec["cut"], run.about["time"],
          f"dev alignment accuracy {d['dev']['align_accuracy']:.1f} %; "
          f"{spec['set_name']} error {test['mean']:.2f} % "
          f"({spec['similarity'].upper()})"][:len(columns)]


def _mining_preset(spec: dict, columns) -> list:
  """paper_presets: a `paraflax mining-eval` output's row of the preset's
  margin and retrieval (its k checked to be the preset's)."""
  with open(os.path.join(run_results.ROOT, spec["file"]),
            encoding="utf-8") as f:
    d = json.load(f)
  if d["k"] != spec["k"]:
    raise ValueError(f"{spec['file']}: k = {d['k']}, not {spec['k']}")
  row = next(r for r in d["rows"] if (r["margin"], r["retrieval"]) ==
             (spec["margin"], spec["retrieval"]))
  return [spec["paper"], spec["config"], spec["cut"], spec["time"],
          f"test F1 {100 * row['test_f1']:.1f} ({spec['model']})"
          ][:len(columns)]


def listed(name: str) -> list[str]:
  """lab/tables/NAME.json: its columns, each row from ROWS."""
  d = _table(name)
  return markdown_table.table(
      d["columns"], [ROWS[r["from"]](r, d["columns"]) for r in d["rows"]])


def headline() -> list[str]:
  return listed("headline")


def sts_encoders() -> list[str]:
  return listed("sts_encoders")


def filter_tables() -> list[str]:
  return listed("filter_tables")


def paper_presets() -> list[str]:
  return listed("paper_presets")


def filtering_downstream() -> list[str]:
  """`paraflax eval-filtering`'s report (its eval_filtering.json, kept in
  runs/): dev BLEU and the noise kept, in the table's order."""
  d = _table("eval_filtering")
  rows = {r["scorer"]: r for r in run_results.load(d["run"]).data["rows"]}
  return _filtering_table([(name, [rows[name]]) for name in d["order"]],
                          d["kinds"], "BLEU")


def filtering_downstream_captions() -> list[str]:
  """The same on caption encoders that align, once per NMT seed: the rows
  of one eval-filtering run a seed, then the `mlp` row of one run per MLP
  (each trained with its own negatives) and seed, by the name of those
  negatives."""
  d = _table("eval_filtering_captions")
  runs = [_by_selection(ref) for ref in d["runs"]]
  shown = [(name, [rows[name, 0 if name == "unfiltered" else d["words"]]
                   for rows in runs]) for name in d["order"]]
  for label, refs in d["mlp"]:
    shown.append((label, [_by_selection(ref)["mlp", d["words"]]
                          for ref in refs]))
  return _filtering_table(shown, d["kinds"], _seeds(d))


def filtering_downstream_budgets() -> list[str]:
  """The caption encoders' selections at several budgets N, each trained
  once per NMT seed."""
  d = _table("eval_filtering_captions")
  runs = [_by_selection(ref) for ref in d["runs"]]
  shown = [("unfiltered", [rows["unfiltered", 0] for rows in runs])]
  shown += [(name, [rows[name, n] for rows in runs])
            for n in d["budgets"] for name in d["order"]
            if name != "unfiltered"]
  return _filtering_table(shown, d["kinds"], _seeds(d))


def _caption_bleus() -> dict[str, tuple[str, list[float]]]:
  """The caption encoders' selections: key -> (label, BLEU per NMT seed);
  keys "unfiltered", "cosine.75000" (a selection at a budget) and
  "mlp-band60" (that MLP's `mlp` row at the table's N)."""
  d = _table("eval_filtering_captions")
  runs = [_by_selection(ref) for ref in d["runs"]]
  out = {"unfiltered": ("unfiltered",
                        [rows["unfiltered", 0]["bleu"] for rows in runs])}
  out.update({f"{name}.{n}": (name, [rows[name, n]["bleu"] for rows in runs])
              for n in d["budgets"] for name in d["order"][1:]})
  for label, refs in d["mlp"]:
    out[_mlp_key(refs)] = (
        label.removeprefix("mlp: ").split(" (")[0],
        [_by_selection(ref)["mlp", d["words"]]["bleu"] for ref in refs])
  return out


def _mlp_key(refs: list[str]) -> str:
  """An MLP's key, from its runs ("eval_filtering/captions-mlp-band60")."""
  return "mlp-" + refs[0].rsplit("captions-mlp-", 1)[1]


def _budget_share(ref: str, words: int) -> str:
  """`words` target words as a share (%) of the noisy corpus's, which run
  `ref`'s unfiltered row trained on."""
  whole = _by_selection(ref)["unfiltered", 0]["target_words"]
  return f"{100 * words / whole:.0f}"


def _spread(bleus: list[float]) -> str:
  return f"{min(bleus):.1f}-{max(bleus):.1f}"


def _filtering_pays() -> tuple[list[str], list[float]]:
  """At the table's N: the selections (similarities and MLPs) that beat
  the unfiltered corpus and the random selection with every NMT seed, and
  the labels of those that do not."""
  d, bleus = _table("eval_filtering_captions"), _caption_bleus()
  floor = max(bleus["unfiltered"][1] + bleus[f"random.{d['words']}"][1])
  chosen = {k: v for k, v in bleus.items()
            if k.startswith("mlp-") or k in {f"{name}.{d['words']}"
                                             for name in d["order"][2:]}}
  return ([label for label, b in chosen.values() if min(b) <= floor],
          [x for _, b in chosen.values() if min(b) > floor for x in b])


def _caption_values() -> dict[str, Callable[[], str]]:
  """lab/fidelity.md's prose on the caption selections: each one's BLEU
  "seed 0 / seed 1" (captions.bleu.KEY, keys as _caption_bleus), the
  similarities' lowest-highest at a budget (captions.range.N) and the
  random selections' at every budget (captions.range.random), each
  budget's share of the corpus's target words (captions.share.N), the rows
  that filtering pays for and those it does not (captions.pays,
  captions.pays_not)."""
  d = _table("eval_filtering_captions")
  keys = ["unfiltered", *(f"{name}.{n}" for n in d["budgets"]
                          for name in d["order"][1:]),
          *(_mlp_key(refs) for _, refs in d["mlp"])]
  out: dict[str, Callable[[], str]] = {
      f"captions.bleu.{k}": (lambda k=k: " / ".join(
          f"{b:.2f}" for b in _caption_bleus()[k][1])) for k in keys}
  out.update({f"captions.range.{n}": (lambda n=n: _spread([
      b for name in d["order"][2:] for b in _caption_bleus()[
          f"{name}.{n}"][1]])) for n in d["budgets"]})
  out["captions.range.random"] = lambda: _spread([
      b for n in d["budgets"] for b in _caption_bleus()[f"random.{n}"][1]])
  out.update({f"captions.share.{n}": functools.partial(
      _budget_share, d["runs"][0], n) for n in d["budgets"]})
  out["captions.pays"] = lambda: _spread(_filtering_pays()[1])
  out["captions.pays_not"] = lambda: ", ".join(_filtering_pays()[0]) or "none"
  return out


def _by_selection(ref: str) -> dict[tuple[str, int], dict]:
  """An eval-filtering run's rows by (scorer, N)."""
  return {(r["scorer"], r["words"]): r
          for r in run_results.load(ref).data["rows"]}


def _seeds(d: dict) -> str:
  return "BLEU, NMT seed " + " / ".join(map(str, d["nmt_seeds"]))


def _filtering_table(rows: list[tuple[str, list[dict]]], kinds: list[str],
                     bleu: str) -> list[str]:
  """One row a selection: its BLEU in each run (the same pairs: counts
  from the first)."""
  return markdown_table.table(
      ["selection", "N target words", "pairs", bleu, "clean", *kinds],
      [[name, f"{r[0]['words']:,}" if r[0]["words"] else "all",
        f"{r[0]['pairs']:,}",
        " / ".join(markdown_table.num(x["bleu"]) for x in r),
        *(f"{r[0]['kept'][k]:,}" for k in ("clean", *kinds))]
       for name, r in rows], numeric_from=1)


# Wieting et al. 2017's grids (configs/sweeps/*.py:<enc>,...,paper): the
# `paraflax sweep` output of a grid, kept as runs/paper_grids/<score>-avg.
_DEV, _TEST = "selected", "sts_all/STSb.test/pearson"


def bounds(point: dict) -> tuple[float, float]:
  """A point's data.filter bounds, from its override."""
  spec = ast.literal_eval(point["overrides"][0].split("=", 1)[1])
  return float(spec["lo"]), float(spec["hi"])


def _grid_cell(point: dict, best: str) -> str:
  if point.get("status") != "finished":
    return "failed"
  cell = (f"{100 * point[_DEV]:.2f} / "
          f"{100 * point['columns'][_TEST]:.2f}")
  return markdown_table.bold_if(cell, point["name"] == best)


def _grid_table(scores: tuple[str, ...]) -> list[str]:
  """Each grid's points as `STSb dev / STSb test` (Pearson x 100), a row a
  lower bound, a column an upper bound; the point STSb dev picks in bold."""
  rows, uppers = [], set()
  for score in scores:
    points = run_results.load(f"paper_grids/{score}-avg").data["points"]
    best = best_point(points)["name"] if _finished(points) else ""
    by_bounds = {bounds(p): p for p in points}
    uppers |= {hi for _, hi in by_bounds}
    for lo in sorted({lo for lo, _ in by_bounds}):
      rows.append((score, lo, {hi: _grid_cell(p, best)
                               for (l, hi), p in by_bounds.items()
                               if l == lo}))
  uppers = sorted(uppers)
  return markdown_table.table(
      ["score", "lower bound", *(f"<= {hi:g}" for hi in uppers)],
      [[score, f"{lo:g}", *(cells.get(hi, "") for hi in uppers)]
       for score, lo, cells in rows])


# The filter tables (lab/experiments/filter_tables/sweeps.sh): each column
# a `paraflax sweep` output, kept as runs/<row's runs>-<sweep>, the sweep
# named as sweeps.sh names its workdir.
_STS = "sts_all/semeval_2012_2015/mean_pearson"
FILTER_SWEEPS = {"random": "random", "length": "length", "cost": "cost",
                 "overlap_1": "overlap", "bleu": "bleu", "lm_ppl": "lm_ppl",
                 "ref_prob": "ref_prob", "overlap_1 ranges": "overlap_1_ranges",
                 "bleu ranges": "bleu_ranges"}


def _finished(points: list[dict]) -> list[dict]:
  return [p for p in points if p.get("status") == "finished"]


def best_point(points: list[dict]) -> dict:
  """The finished point of a sweep that STSb dev picks."""
  return max(_finished(points), key=lambda p: p[_DEV])


def seeds_mean(points: list[dict], column: str = _TEST) -> float:
  """A random grid's mean of `column` over its finished seeds."""
  done = _finished(points)
  return sum(p["columns"][column] for p in done) / len(done)


def filter_cell(points: list[dict], random: bool) -> str:
  """`[lo, hi]: STSb test / STS12-15 mean` (Pearson x 100) of the point
  STSb dev picks; of a random grid, its seeds' means."""
  done = _finished(points)
  if not done:
    return f"none of {len(points)} kept N"
  if random:
    return " / ".join(f"{100 * seeds_mean(points, k):.2f}"
                      for k in (_TEST, _STS))
  best = best_point(points)
  failed = sum(p["status"].startswith("failed") for p in points)
  part = ("" if len(done) + failed == len(points)
          else f" ({len(done)} of {len(points)} run)")
  lo, hi = bounds(best)
  return (f"[{lo:g}, {hi:g}]: {100 * best['columns'][_TEST]:.2f} / "
          f"{100 * best['columns'][_STS]:.2f}{part}")


def _filter_row(spec: dict, columns) -> list:
  """filter_tables: one file's sweeps for one encoder, a column each; a
  column in spec["absent"] (human pairs have no NMT cost) shows its text."""
  absent = spec.get("absent", {})

  def cell(column: str) -> str:
    if column in absent:
      return absent[column]
    run = run_results.load(f"{spec['runs']}-{FILTER_SWEEPS[column]}")
    return filter_cell(run.data["points"], column == "random")

  return [spec["data"], spec["encoder"], *map(cell, columns[2:])]


def _seeds_spread(points: list[dict]) -> float:
  """A random grid's highest minus lowest STSb test over its seeds."""
  tests = [p["columns"][_TEST] for p in _finished(points)]
  return max(tests) - min(tests)


def _sweep_figures() -> dict[str, Callable[[dict], str]]:
  """A kept sweep's point STSb dev picks ("best.bounds", "best.stsb_test",
  Pearson x 100), or a random grid's seeds' mean STSb test and their
  spread (points)."""
  return {"spread.stsb_test": lambda r: (
              f"{100 * _seeds_spread(r['points']):.1f}"),
          "best.bounds": lambda r: "[{:g}, {:g}]".format(
              *bounds(best_point(r["points"]))),
          "best.stsb_test": lambda r: (
              f"{100 * best_point(r['points'])['columns'][_TEST]:.2f}"),
          "mean.stsb_test": lambda r: f"{100 * seeds_mean(r['points']):.2f}"}


def _grid_figures() -> dict[str, Callable[[dict], str]]:
  """A paper grid's point STSb dev picks (_sweep_figures), and the STSb
  test of its point that keeps every pair ("all.stsb_test": lower bound 0,
  the largest upper bound)."""
  def everything(r: dict) -> str:
    top = max(bounds(p)[1] for p in r["points"])
    point = next(p for p in r["points"] if bounds(p) == (0.0, top))
    return f"{100 * point['columns'][_TEST]:.2f}"
  return {**_sweep_figures(), "all.stsb_test": everything}


def _filter_headline(spec: dict, columns) -> list:
  """headline: the point STSb dev picks of one kept filter sweep, its STSb
  test against the mean of the kept random seeds'."""
  del columns
  run = run_results.load(spec["run"])
  figures = _sweep_figures()
  random = run_results.load(spec["random"]).data
  return [spec["method"], f"`{spec['config']}`", run.about["hardware"],
          run.about["time"],
          f"`{spec['score']}` in {figures['best.bounds'](run.data)}: STSb "
          f"test {figures['best.stsb_test'](run.data)} against "
          f"{figures['mean.stsb_test'](random)} for random pairs "
          f"(N = {spec['pairs']:,})"]


# configs/gran.py's comparisons (lab/experiments/gran_ablations/): each a
# kept `paraflax sweep` of configs/sweeps/gran_ablations.py over one
# setting's values x seeds 0 and 1, listed in lab/tables/gran_ablations.json.
def _by_value(points: list[dict]) -> dict[tuple[str, ...], list[dict]]:
  """A setting sweep's points by their overrides less the seed, in order."""
  out: dict[tuple[str, ...], list[dict]] = {}
  for p in points:
    out.setdefault(tuple(o for o in p["overrides"]
                         if not o.startswith("seed=")), []).append(p)
  return out


def _mean(points: list[dict], key: str) -> float:
  return sum(p[key] if key == _DEV else p["columns"][key]
             for p in points) / len(points)


def _ablation_rows(spec: dict) -> list[list[str]]:
  """One row a value of a kept setting sweep: best STSb dev per seed and
  their mean (the highest mean bold), STSb test and STS12-15 means; a
  value with an unfinished seed says so and has no means."""
  by = _by_value(run_results.load(spec["run"]).data["points"])
  whole = {v: ps for v, ps in by.items() if len(_finished(ps)) == len(ps)}
  top = max((_mean(ps, _DEV) for ps in whole.values()), default=None)
  rows = []
  for (value, ps), label in zip(by.items(), spec["values"], strict=True):
    label += " (configs/gran.py)" if label == spec["chosen"] else ""
    dev = " / ".join(f"{100 * p[_DEV]:.2f}" if p.get("status") == "finished"
                     else p.get("status", "not run") for p in ps)
    means = ([markdown_table.bold_if(f"{100 * _mean(ps, _DEV):.2f}",
                                     _mean(ps, _DEV) == top),
              f"{100 * _mean(ps, _TEST):.2f}", f"{100 * _mean(ps, _STS):.2f}"]
             if value in whole else ["", "", ""])
    rows.append([spec["setting"], label, dev, *means])
  return rows


def _ablation_figures(spec: dict) -> dict[str, Callable[[dict], str]]:
  """A kept setting sweep's two-seed means of each value, Pearson x 100,
  by the value's label: best STSb dev ("dev_mean.0.3"), and the STSb test
  and STS12-15 of the checkpoints it picks ("test_mean.0.3",
  "sts_mean.0.3")."""
  def mean(r: dict, label: str, key: str) -> str:
    return f"{100 * _mean(_by_label(spec, r['points'])[label], key):.2f}"
  return {f"{name}.{v}": (lambda r, v=v, key=key: mean(r, v, key))
          for name, key in (("dev_mean", _DEV), ("test_mean", _TEST),
                            ("sts_mean", _STS))
          for v in spec["values"]}


def _by_label(spec: dict, points: list[dict]) -> dict[str, list[dict]]:
  """A setting sweep's points by the label of their value."""
  return dict(zip(spec["values"], _by_value(points).values(), strict=True))


def _chosen_points(spec: dict) -> list[dict]:
  """A setting sweep's points at configs/gran.py's own settings."""
  points = run_results.load(spec["run"]).data["points"]
  return _by_label(spec, points)[spec["chosen"]]


def _same_config_runs() -> str:
  """The setting sweeps, grouped by what configs/gran.py's own runs in
  them scored, every metric to the last digit ("scramble, margin and
  mixture; batch")."""
  groups: dict[str, list[str]] = {}
  for spec in _table("gran_ablations")["rows"]:
    scores = json.dumps([p["metrics"] for p in _chosen_points(spec)],
                        sort_keys=True)
    groups.setdefault(scores, []).append(spec["run"].split("/")[-1])
  return "; ".join(" and ".join(g) if len(g) < 3 else
                   ", ".join(g[:-1]) + " and " + g[-1]
                   for g in groups.values())


def gran_ablations() -> list[str]:
  d = _table("gran_ablations")
  return markdown_table.table(
      d["columns"], [r for spec in d["rows"] for r in _ablation_rows(spec)],
      numeric_from=2)


def paper_grids_overlap() -> list[str]:
  return _grid_table(("overlap_1", "bleu"))


def paper_grids_lm() -> list[str]:
  return _grid_table(("lm_ppl",))


# A listed table's row kinds (lab/tables/<table>.json's "from").
ROWS: dict[str, Callable[[dict, list], list]] = {
    "sts": _sts_row, "sts-headline": _sts_headline,
    "pipeline-headline": _pipeline_headline,
    "domain-headline": _domain_headline, "domain-preset": _domain_preset,
    "mining-eval-headline": _mining_headline, "values": _valued,
    "bleu-headline": _bleu_headline,
    "sts-preset": _sts_preset, "bilingual-preset": _bilingual_preset,
    "mining-eval-preset": _mining_preset, "filter-sweeps": _filter_row,
    "filter-headline": _filter_headline}


# --- figures that prose quotes (render_tables' values) -------------------------

def _tiny_figures() -> dict[str, Callable[[dict], str]]:
  """The README's words on the tiny pipeline, from its report."""
  test = lambda r: r["mining"]["benchmarks"]["test"]  # noqa: E731
  return {
      "sts12_15": lambda r: _x100(r["sts"]["semeval_2012_2015"]["mean_pearson"]),
      "stsb_test": lambda r: _x100(r["sts"]["datasets"]["STSb.test"]["pearson"]),
      "kept_pairs": lambda r: f"{r['score']['pairs']:,}",
      # The best STSb dev-tuning of the words and of the GRAN started
      # from them.
      "words_dev": lambda r: _x100(r["words"]["best"]),
      "gran_dev": lambda r: _x100(r["gran"]["best"]),
      "nmt_steps": lambda r: f"{r['nmt']['steps']:,}",
      "nmt_bleu": lambda r: f"{r['nmt']['best']:.2f}",
      "bilingual_steps": lambda r: f"{r['bilingual']['steps']:,}",
      "gold": lambda r: f"{test(r)['gold']:,}",
      "distractors": lambda r: f"{test(r)['src'] - test(r)['gold']:,}",
      "precision": lambda r: _x100(r["mining"]["test"]["precision"]),
      "recall": lambda r: _x100(r["mining"]["test"]["recall"]),
      "f1": lambda r: _x100(r["mining"]["test"]["f1"]),
      "shown": lambda r: str(len(r["mining"]["sample"])),
      "shown_correct": lambda r: str(sum(p["gold"]
                                         for p in r["mining"]["sample"])),
  }


def _sts_figures() -> dict[str, Callable[[dict], str]]:
  """An STS evaluation's figures, from its output (eval-sts)."""
  dataset = lambda name: lambda r: _x100(  # noqa: E731
      r["datasets"][name]["pearson"])
  return {"sts12_15": lambda r: _x100(r["semeval_2012_2015"]["mean_pearson"]),
          "stsb_dev": dataset("STSb.dev"), "stsb_test": dataset("STSb.test"),
          "sick_train": dataset("SICK.train"),
          "step": lambda r: f"{r['checkpoint_step']:,}"}


def _bleu_figures() -> dict[str, Callable[[dict], str]]:
  """An NMT's `paraflax eval` figures (its evals.json): dev_all's BLEU and
  share of outputs cut at their limit (%), dev's BLEU where it ran."""
  return {"bleu": lambda r: f"{r['dev_all']['bleu']:.2f}",
          "cut": lambda r: f"{r['dev_all']['hit_max_output']:.2f}",
          "dev_bleu": lambda r: f"{r['dev']['bleu']:.2f}",
          "step": lambda r: f"{r['checkpoint_step']:,}"}


DOMAIN = "headline/domain-selection"
_METHODS = ("moore_lewis", "random", "ngram_overlap")


def _perplexities(r: dict) -> dict[tuple[str, int], dict]:
  """(method, sentences) -> its row of `paraflax eval-domain`'s results."""
  return {(row["method"], row["size"]): row for row in r["rows"]}


def domain_selection() -> list[str]:
  """Biomedical test perplexity of an LM on each selection, per size (the
  lowest bold), with the perplexity without unseen tokens in brackets."""
  return _selection_table(DOMAIN)


# The selection LMs' settings tried on the biomedical dev text, and the
# chosen ones on a second domain (`paraflax domain-data --domain
# abc_science`), each a kept run of select-domain and eval-domain.
DOMAIN_SETTINGS = "domain_settings"
DOMAIN_DEV_GRID = {(m, n): f"{DOMAIN_SETTINGS}/dev-m{m}-o{n}"
                   for m in (1, 2, 3) for n in (2, 3, 4)}
DOMAIN_ABC = {n: f"{DOMAIN_SETTINGS}/abc-science-o{n}" for n in (2, 3)}
# The test curve again with other random draws (--eval-seed) and with
# order-3 selection LMs.
DOMAIN_TEST_VARIANTS = tuple(f"{DOMAIN_SETTINGS}/test-{v}"
                             for v in ("seed1", "seed2", "o3"))
# The test curve with its LMs estimated without lmplz --vocab_pad
# (--config.eval_vocab_pad=False).
DOMAIN_NO_PAD = f"{DOMAIN_SETTINGS}/test-nopad"
_SIZES = (2000, 4000, 8000, 16000, 32000)


def domain_abc_science() -> list[str]:
  """domain_selection's table for ABC science news, order-2 selection LMs."""
  return _selection_table(DOMAIN_ABC[2])


def domain_no_pad() -> list[str]:
  """domain_selection's table with the curve's LMs estimated unpadded."""
  return _selection_table(DOMAIN_NO_PAD)


def _ratio(r: dict, size: int) -> float:
  """Top diffCE's perplexity over random's at `size` in eval-domain's `r`."""
  by = _perplexities(r)
  return by["moore_lewis", size]["perplexity"] / by["random", size]["perplexity"]


def _ratios(ref: str) -> list[float]:
  """_ratio at each of _SIZES of kept run REF."""
  r = _report(ref)
  return [_ratio(r, n) for n in _SIZES]


def domain_dev_grid() -> list[str]:
  """Top diffCE / random on the dev text at each size, per min_count (rows)
  and selection LM order (columns); the lowest ratio at 2,000 bold."""
  ratios = {k: _ratios(ref) for k, ref in DOMAIN_DEV_GRID.items()}
  best = min(r[0] for r in ratios.values())
  orders = sorted({n for _, n in ratios})
  return markdown_table.table(
      ["min_count", *(f"order {n}" for n in orders)],
      [(m, *(" / ".join([markdown_table.bold_if(
          f"{ratios[m, n][0]:.3f}", ratios[m, n][0] == best),
                         *(f"{r:.3f}" for r in ratios[m, n][1:])])
             for n in orders)) for m in sorted({m for m, _ in ratios})])


def _selection_table(ref: str) -> list[str]:
  """Test perplexity of an LM on each selection of run REF, per size (the
  lowest bold), with the perplexity without unseen tokens in brackets."""
  by = _perplexities(_report(ref))
  out = []
  for size in sorted({size for _, size in by}):
    ppl = {m: by[m, size]["perplexity"] for m in _METHODS}
    out.append((f"{size:,}", *(
        markdown_table.bold_if(f"{ppl[m]:.1f}", ppl[m] == min(ppl.values()))
        + f" ({by[m, size]['perplexity_no_oov']:.1f})" for m in _METHODS),
                f"{ppl['moore_lewis'] / ppl['random']:.3f}",
                " / ".join(f"{100 * by[m, size]['oov_rate']:.1f}"
                           for m in _METHODS[:2])))
  return markdown_table.table(
      ["sentences", "top diffCE", "random", "n-gram overlap",
       "top diffCE / random",
       "tokens unseen by the LM, % (top diffCE / random)"], out,
      numeric_from=1)


def _domain_figures() -> dict[str, Callable[[dict], str]]:
  """eval-domain's figures at 2,000 selected sentences (and the ratio at
  32,000)."""
  def at(r: dict, method: str, key: str = "perplexity",
         size: int = 2000) -> float:
    return _perplexities(r)[method, size][key]
  return {**{f"ratio_{size}": lambda r, size=size: f"{_ratio(r, size):.3f}"
             for size in (2000, 32000)},
          **{f"{m}_2000": (lambda r, m=m: f"{at(r, m):.1f}")
             for m in _METHODS},
          **{f"{m}_2000_no_oov": (
              lambda r, m=m: f"{at(r, m, 'perplexity_no_oov'):.1f}")
             for m in _METHODS}}


PIVOT = "headline/pivot-monods"
# The same commands with --bits 1024: another run, so another alignment
# (eflomal has no seed) and a table of its own.
PIVOT_1024 = "domain/pivot-monods-1024"
# eval-ppdb's rankings of a MonoDS-reranked table, as docs/domain.md names them.
_RANKINGS = {"p": "pivot p(e2|e1) alone", "monods": "MonoDS alone",
             "score": "pivot + MonoDS (w = 0.5)"}


def ppdb_agreement() -> list[str]:
  """PPDB agreement x 100 of each ranking of the general table reranked
  with B = 256 signatures, and of another run's reranked with B = 1024:
  a column pair per run, the best of each column in bold."""
  runs = {256: _report(PIVOT)["precision"],
          1024: _report(PIVOT_1024)["precision"]}
  best = {(bits, k): max(p[k] for p in runs[bits].values())
          for bits in runs for k in ("p@1", "p@5")}
  return markdown_table.table(
      ["ranking", *(f"B = {bits:,}: {k}" for bits in runs
                    for k in ("P@1", "P@5"))],
      [(label.replace("|", "\\|"), *(
          markdown_table.bold_if(f"{100 * runs[bits][name][k]:.1f}",
                                 runs[bits][name][k] == best[bits, k])
          for bits in runs for k in ("p@1", "p@5")))
       for name, label in _RANKINGS.items()], numeric_from=1)


PIVOT_GENERAL = "domain/pivot-general"
# eval-ppdb of a general table without MonoDS, on the biomedical test text.
PPDB_GENERAL = "domain/ppdb-general-biomed"
MONODS_GENERAL = {256: "domain/monods-general", 1024: "domain/monods-general-1024"}


def pivot_general() -> list[str]:
  """The general pivot table's steps (pivot's and monods' summaries) with
  their rates, and each whole command's time (the runs' sidecars)."""
  langs = _report(PIVOT_GENERAL)["languages"]
  names = sorted(langs)

  def each(key: str, fmt: str) -> str:
    return " / ".join(fmt.format(langs[n][key]) for n in names)
  slash = " / ".join(names)
  return markdown_table.table(["step", "work", "time", "rate"], [
      (f"eflomal both ways + grow-diag-final-and, {slash}",
       each("pairs", "{:,}") + " pairs", each("align_s", "{:.0f}") + " s",
       each("pairs_per_s", "{:,.0f}") + " pairs/s"),
      (f"phrase extraction, {slash}",
       each("phrase_pairs", "{:,}") + " phrase pairs",
       each("extract_s", "{:.1f}") + " s",
       each("phrase_pairs_per_s", "{:,.0f}") + " phrase pairs/s"),
      ("the whole `pivot` command (reading, alignment, extraction, table)",
       "", run_results.load(PIVOT_GENERAL).about["time"], ""),
      *(row for bits, ref in MONODS_GENERAL.items()
        for row in _monods_rows(bits, run_results.load(ref)))])


# The domain-adapted tables (docs/domain.md): label -> pivot's summary, the
# table's eval-ppdb on the biomedical test text, its MonoDS-reranked one's.
DOMAIN_BINS = {
    "top diffCE (bins 1-2)": ("domain/pivot-top", "domain/ppdb-top",
                              "domain/monods-top"),
    "random, same size (bins r1-r2)": ("domain/pivot-random",
                                       "domain/ppdb-random",
                                       "domain/monods-random"),
    "bottom diffCE (bins 7-8)": ("domain/pivot-bottom", "domain/ppdb-bottom",
                                 None),
    "general (all the bitext)": (PIVOT_GENERAL, PPDB_GENERAL,
                                 PIVOT),
}


def _p1_p5(precision: dict) -> str:
  return " / ".join(f"{100 * precision[k]:.1f}" for k in ("p@1", "p@5"))


def domain_bins() -> list[str]:
  """Per table: pairs per language and paraphrase pairs (pivot's summary),
  coverage of the biomedical test n-grams and PPDB agreement (eval-ppdb),
  and the agreement after MonoDS reranking."""
  rows = []
  for label, (pivot, ppdb, monods) in DOMAIN_BINS.items():
    langs, report = _report(pivot)["languages"], _report(ppdb)
    (cov,) = report["coverage"].values()
    rows.append((
        label, " / ".join(f"{langs[n]['pairs']:,}" if n in langs else "0"
                          for n in ("de", "fr", "cs")),
        f"{_report(pivot)['lines']:,}",
        " / ".join(f"{100 * cov[n]['tokens']:.1f}" for n in "1234"),
        f"{100 * cov['all']['tokens']:.1f}", f"{report['words']:,}",
        _p1_p5(report["precision"]["score"]),
        _p1_p5(_report(monods)["precision"]["score"]) if monods else ""))
  return markdown_table.table(
      ["table", "pairs (de / fr / cs)", "paraphrase pairs",
       "coverage of the test 1- / 2- / 3- / 4-grams, % of occurrences",
       "all 1-4-grams, %", "PPDB words", "P@1 / P@5 pivot",
       "P@1 / P@5 pivot + MonoDS (w = 0.5, B = 256)"], rows, numeric_from=1)


def _monods_rows(bits: int, run: run_results.Run) -> list[tuple]:
  d = run.data
  return [(f"`monods` signatures ({d['events']:,} events of "
           f"{d['phrases_seen']:,} phrases)",
           f"{d['devices']} CPU device, B = {bits:,}", f"{d['seconds']:.1f} s",
           f"{d['events_per_s']:,.0f} events/s"),
          (f"`pivot`, then `monods` with B = {bits:,} (the table, the "
           "signatures, the reranked table): the run's whole command", "",
           run.about["time"], "")]


def _pivot_figures() -> dict[str, Callable[[dict], str]]:
  """pivot's summary: pairs per language, the table's size."""
  return {**{f"{lang}.pairs": (lambda r, lang=lang:
                               f"{r['languages'][lang]['pairs']:,}")
             for lang in ("de", "fr", "cs")},
          "skipped": lambda r: (
              f"{sum(side['skipped'] for side in r['languages'].values()):,}"),
          "lines": lambda r: f"{r['lines']:,}",
          "e1": lambda r: f"{r['e1']:,}"}


def _ppdb_figures() -> dict[str, Callable[[dict], str]]:
  """eval-ppdb's counts, precisions and coverage of its one --coverage text."""
  def coverage(r: dict, n: str) -> str:
    (cov,) = r["coverage"].values()
    return f"{100 * cov[n]['tokens']:.1f}"

  def lift(r: dict, k: str) -> str:  # MonoDS's lift over pivoting alone
    p = r["precision"]
    return f"{100 * (p['score'][k] - p['p'][k]):.1f}"
  return {"words": lambda r: f"{r['words']:,}",
          "lift.p1": lambda r: lift(r, "p@1"),
          "lift.p5": lambda r: lift(r, "p@5"),
          **{f"{name}.p{k[2:]}": (lambda r, name=name, k=k:
                             f"{100 * r['precision'][name][k]:.1f}")
             for name in _RANKINGS for k in ("p@1", "p@5")},
          **{f"coverage.{n}": (lambda r, n=n: coverage(r, n))
             for n in ("1", "2", "3", "4", "all")}}


def _bilingual_figures() -> dict[str, Callable[[dict], str]]:
  """A bilingual model's `paraflax eval` figures (its evals.json)."""
  return {"dev_align": lambda r: f"{r['dev']['align_accuracy']:.1f}",
          "step": lambda r: f"{r['checkpoint_step']:,}"}


def _classifier_figures() -> dict[str, Callable[[dict], str]]:
  """A reference classifier's `paraflax eval` figures (its evals.json)."""
  return {"dev_accuracy": lambda r: f"{r['dev']['accuracy']:.1f}",
          "test_accuracy": lambda r: f"{r['test']['accuracy']:.1f}",
          "step": lambda r: f"{r['checkpoint_step']:,}"}


def _mining_figures() -> dict[str, Callable[[dict], str]]:
  """A `paraflax mining-eval` output's test F1 x 100 at the dev threshold,
  per margin and retrieval ("ratio.max")."""
  return {f"{m}.{k}": (lambda r, m=m, k=k:
                       f"{100 * _mining_row(r['rows'], m, k)['test_f1']:.1f}")
          for m in ("absolute", "distance", "ratio")
          for k in ("fwd", "bwd", "intersect", "max")}


def _bilingual_eval_figures() -> dict[str, Callable[[dict], str]]:
  """An `eval-bilingual` report's alignment error range of a similarity
  over its test sets ("mlp.align"), and a similarity's ParaCrawl ROC-AUC x
  100 per release ("mlp.v3")."""
  def align(r: dict, sim: str) -> str:
    errors = [x["mean"] for x in r["alignment"] if x["similarity"] == sim]
    return f"{min(errors):.1f}-{max(errors):.1f}"

  def auc(r: dict, sim: str, release: str) -> str:
    row = next(x for x in r["paracrawl"]
               if (x["scorer"], x["release"]) == (sim, release))
    return f"{100 * row['auc']:.1f}"
  sims = ("cosine", "csls", "mlp")
  return {**{f"{s}.align": (lambda r, s=s: align(r, s)) for s in sims},
          **{f"{s}.{v}": (lambda r, s=s, v=v: auc(r, s, v))
             for s in sims for v in ("v3", "v6")}}


# The runs whose figures prose quotes, by what their output holds.
_QUOTED_RUNS = (
    (PIPELINE, _tiny_figures()),
    (f"{PIPELINE}-bridge", _tiny_figures()),
    (f"{PIPELINE}-nmt600", _tiny_figures()),
    (f"{PIPELINE}-lr3e-3", _tiny_figures()),
    *((f"sts_encoders/{n}", _sts_figures())
      for n in ("avg", "lstmavg", "ppdb-words", "ppdb-words-lr1e-3",
                "gran-seed0", "gran-seed1",
                "gran-random", "gran-backtranslated")),
    *((f"paper_presets/{n}", _sts_figures())
      for n in ("avg-default", "avg-wieting2017")),
    *((f"seqio_cache/{n}", _sts_figures()) for n in ("file", "cache")),
    *((f"paper_presets/{n}", _bilingual_figures())
      for n in ("bilingual-default", "bilingual-kim2019")),
    *((f"headline/{n}", _bleu_figures()) for n in ("nmt-de", "nmt-de-epyc")),
    *((f"config_runs/nmt-{n}", _bleu_figures())
      for n in ("fr", "fr-nolimit", "cs")),
    *((f"config_runs/refclf-{n}", _classifier_figures())
      for n in ("avg-random", "avg-hardest", "lstm-random", "lstm-hardest",
                "avg-random-nmt1500")),
    ("config_runs/nmt-de-1500", _bleu_figures()),
    *((f"config_runs/bilingual-{n}", _bilingual_figures())
      for n in ("de", "fr", "cs", "de-500-initial", "de-500-feed",
                "captions")),
    (DOMAIN, _domain_figures()),
    *((ref, _domain_figures())
      for ref in (*DOMAIN_DEV_GRID.values(), *DOMAIN_ABC.values(),
                  *DOMAIN_TEST_VARIANTS, DOMAIN_NO_PAD)),
    ("paper_presets/domain-paraphrasing-select", _domain_figures()),
    (PIVOT, _ppdb_figures()),
    (PIVOT_1024, _ppdb_figures()),
    (PIVOT_GENERAL, _pivot_figures()),
    *((f"domain/pivot-{n}", _pivot_figures())
      for n in ("top", "random", "bottom", "bin1")),
    *((f"domain/ppdb-{n}", _ppdb_figures())
      for n in ("top", "random", "bottom", "general-biomed", "bin1")),
    *((f"domain/monods-{n}", _ppdb_figures()) for n in ("top", "random")),
    ("domain/monods-bin1", {}),
    # The highest dev BLEU of any selection: all at noise level.
    ("eval_filtering/cut", {"top_bleu": lambda r: (
        f"{max(row['bleu'] for row in r['rows']):.2f}")}),
    *((f"mining/bilingual-{n}", _mining_figures()) for n in ("fr", "cs")),
    ("config_runs/bilingual-recon", _bilingual_figures()),
    ("mining/reconstruction-de", {}),
    *((f"paper_grids/{score}-avg", _grid_figures())
      for score in ("overlap_1", "bleu", "lm_ppl")),
    *((f"config_runs/mlp-fr-{n}", _bilingual_eval_figures())
      for n in ("worst", "shuffled")),
    *((spec["run"], _ablation_figures(spec))
      for spec in _table("gran_ablations")["rows"]),
    *((f"filter_tables/{n}-avg-random", _sweep_figures())
      for n in ("de-multi30k", "de-wmt", "fr-multi30k", "fr-news",
                "cs-multi30k", "cs-news", "wikiauto")),
    *((f"filter_tables/wikiauto-{enc}-lm_ppl", _sweep_figures())
      for enc in ("avg", "gran")),
    ("filter_tables/wikiauto-gran-random", _sweep_figures()),
    *((f"filter_tables/cs-{d}-gran-{n}", _sweep_figures())
      for d in ("news", "multi30k") for n in ("random", "length")),
    ("filter_tables/cs-multi30k-gran-overlap_1_ranges", _sweep_figures()),
    *((f"filter_tables/de-wmt-{enc}-{n}", _sweep_figures())
      for enc in ("avg", "gran")
      for n in ("overlap_1_ranges", "ref_prob", "length")),
    *((f"filter_tables/de-{d}-gran-random", _sweep_figures())
      for d in ("wmt", "multi30k")),
    *((f"filter_tables/{lang}-news-avg-{n}", _sweep_figures())
      for lang in ("fr", "cs")
      for n in ("length", "ref_prob", "overlap_1_ranges")))


def _minutes(seconds: str) -> str:
  m, s = divmod(int(seconds), 60)
  return f"{m} min" + (f" {s} s" if s else "")


# Figures read from the logs a GPU session kept (lab/benchmarks/gpu/
# session.sh writes them): name -> (file in the session folder, the pattern
# whose first group is the figure, how it is written).
H100_SESSION = "gpu_session.de-en.nvidia-h100"
_SESSION_FIGURES = {
    "train_time": ("session.log", r"train nmt_de and bi_de for (\d+) s each",
                   _minutes),
    "nmt_de.bleu": ("nmt_de.eval.log", r"BLEU ([\d.]+) on 3000 pairs", str),
    "nmt_de.step": ("nmt_de.eval.log", r"checkpoint step (\d+)",
                    lambda x: f"{int(x):,}"),
    "nmt_de.stopped_at": ("nmt_de.train.log", r"(\d+)/100000 \[",
                          lambda x: f"{int(x):,}"),
    # The last step each training's metrics logged before the stop (its
    # progress bar refreshes less often).
    **{f"{run}.last_step": (f"{run}.metrics.jsonl", r'"step": (\d+)',
                            lambda x: f"{int(x):,}")
       for run in ("nmt_de", "bi_de")},
    "bi_de.step": ("bi_de.eval.log", r"checkpoint step (\d+)",
                   lambda x: f"{int(x):,}"),
    "bi_de.dev_align": ("bi_de.eval.log", r"alignment accuracy ([\d.]+) %",
                        lambda x: f"{float(x):.1f}"),
    "mining.ours_256": ("mining_call2.log",
                        r"ours 1 dev N=50000: ok ([\d.]+) s +\(--dim 256\)", str),
    "mining.ours_512": ("mining_call2.log",
                        r"ours 1 dev N=50000: ok ([\d.]+) s +\(--dim 512\)", str),
    "mining.faiss_256": ("mining_call2.log",
                         r"faiss 1 dev N=50000: ok ([\d.]+) s +\(--dim 256\)",
                         lambda x: f"{float(x):.1f}"),
    "bi_de.newstest2012_csls": (
        "bi_de.eval.log", r"newstest2012 +de +\d+ +csls +\S+ +\S+ +([\d.]+)",
        lambda x: f"{float(x):.1f}"),
}


def _session_figure(file: str, pattern: str, write: Callable[[str], str]
                    ) -> str:
  """The figure of the last match of `pattern` in the session's `file`."""
  path = os.path.join(RESULTS, H100_SESSION, file)
  with open(path, encoding="utf-8") as f:
    found = re.findall(pattern, f.read())
  if not found:
    raise ValueError(f"{os.path.relpath(path, run_results.ROOT)}: no line "
                     f"matches {pattern!r}")
  return write(found[-1])


def _session_seconds(step: str) -> int:
  """When session.sh's STEP ended with exit status 0, in seconds from its
  start (its "== N s: STEP rc 0" line)."""
  return int(_session_figure("session.log", rf"== (\d+) s: {step} rc 0\b",
                             str))


def _h100_minutes_for(run: str, steps: int) -> str:
  """A projection: whole minutes `steps` of `run` (nmt_de, bi_de) take at
  the rate the H100 session trained it, the two sharing the GPU."""
  last, seconds = (int(_session_figure(*_SESSION_FIGURES[key][:2], str))
                   for key in (f"{run}.last_step", "train_time"))
  return f"{steps * seconds / last / 60:.0f} min"


def _bar(path: str, done: str, last: bool = False) -> tuple[int, int]:
  """(steps, elapsed seconds) of the first (or `last`) progress bar of the
  log at `path` (under lab/results/) that reads `done` ("56/1000", or
  "N/N" for a finished bar). A training's bar is drawn again, finished,
  when its last evaluation ends."""
  full = os.path.join(RESULTS, path)
  steps = (r"(\d+)/\1" if done == "N/N" else
           "({})/{}".format(*map(re.escape, done.split("/"))))
  with open(full, encoding="utf-8") as f:
    found = list(re.finditer(
        r"(?<![\d/])" + steps + r" \[(?:(\d+):)?(\d+):(\d+)", f.read()))
  if not found:
    raise ValueError(f"{os.path.relpath(full, run_results.ROOT)}: no "
                     f"progress bar at {done}")
  n, h, m, sec = (int(x or 0) for x in found[-1 if last else 0].groups())
  return n, 3600 * h + 60 * m + sec


H200_LOGS = {  # The preset's NMT at data.width_multiple=8: scale.sh NMT_WIDTH=8.
             "width8": "gpu_scale.pipeline-width8.nvidia-h200/pipeline.log",
             # The preset as it is (decoding at width 32 too): scale.sh.
             "preset": "gpu_scale.pipeline.nvidia-h200/pipeline.log"}
# Beam 50, 50-best, exact stop against beam 5 on 2 CPU cores (the trained
# de-en NMT's decode rows), and the H100's beam-5 back-translation of the
# session's 5,000 WMT sources: the gpu preset's beam-50 projection.
_DECODE = "nmt_vs_opennmt.trained.amd-epyc-2core.json"
_H100_WMT_BT = f"{H100_SESSION}/opennmt_wmt_de_en.bt.log"


def _beam50_slowdown() -> float:
  with open(os.path.join(RESULTS, _DECODE), encoding="utf-8") as f:
    rate = {row["beam"]: row["ours_trained"]["exact"]["sentences_per_s"]
            for row in json.load(f)["decode"]}
  return rate[5] / rate[50]


def _h100_bt_rate() -> float:
  """Sentences per second of the H100's beam-5 WMT back-translation (its
  finished progress bar: the sentences over the bar's seconds)."""
  sentences, seconds = _bar(_H100_WMT_BT, "N/N")
  return sentences / seconds


@functools.lru_cache(maxsize=1)
def _gpu_preset() -> Any:
  """configs/pipeline.py:gpu, loaded once for every figure that reads it."""
  if run_results.ROOT not in sys.path:
    sys.path.insert(0, run_results.ROOT)
  from paraflax import config  # pylint: disable=import-outside-toplevel
  return config.load(os.path.join(run_results.ROOT, "configs", "pipeline.py")
                     + ":gpu")


def _gpu_scoring_minutes() -> float:
  """Minutes the host's 2 cores take to score the gpu preset's
  back-translation, its n-best of each sentence, at the measured rate."""
  bt = _gpu_preset().backtranslate
  rate = quoted.field(_CPU_RATES["score"] + ":")
  return bt.sentences * bt.nbest / rate / 60


def _bt_projection_s() -> float:
  """The gpu preset's beam-50 back-translation at the H100's beam-5 rate."""
  return (_gpu_preset().backtranslate.sentences * _beam50_slowdown()
          / _h100_bt_rate())


# ParaNMT's size, and the price per GPU-hour lab/scaling.md assumes.
PARANMT_PAIRS = 50e6
_DOLLARS_PER_GPU_HOUR = 3


# The measured 2-core rates the projection divides ParaNMT by: quotes of
# a result file's records (or pairs) per second (quoted.py).
_CPU_RATES = {
    "backtranslate": "stage_scale.backtranslate-b256.amd-epyc-2core.json:"
                     "stages/backtranslate/10000000/records_per_s",
    "score": "scoring_throughput.intel-xeon-2core.json:"
             "sizes/records=100000/measures/command_base/records_per_s",
    "gran": "train_throughput.intel-xeon-2core.json:"
            "results/model=gran,length_groups=8/pairs_per_s"}


def _hours_at(rate: str) -> str:
  """Hours ParaNMT's pairs take at the rate that `rate` quotes."""
  return f"{PARANMT_PAIRS / quoted.field(rate + ':') / 3600:.1f}"


# The GPU's gain over 2 CPU cores that lab/scaling.md assumes for the GRAN
# (the NMT's: about 100,000 against 2,000 target tokens/s); not measured.
_ASSUMED_GPU_GAIN = 50


def _gran_gpu_values() -> dict[str, Callable[[], str]]:
  """The GRAN's projected H100 rate (its 2-core rate times the assumed
  gain) and ParaNMT's epoch at it, on one H100 and on 8."""
  def rate() -> float:
    return quoted.field(_CPU_RATES["gran"] + ":") * _ASSUMED_GPU_GAIN
  return {
      "paranmt.gran_h100_pairs_per_s": lambda: f"{rate():,.0f}",
      "paranmt.gran_h100_minutes": lambda: f"{PARANMT_PAIRS / rate() / 60:.0f}",
      "paranmt.gran_8xh100_minutes":
          lambda: f"{PARANMT_PAIRS / rate() / 8 / 60:.0f}"}


def _paranmt_values() -> dict[str, Callable[[], str]]:
  """lab/scaling.md's projection of ParaNMT's back-translation on an
  8-GPU host: the H100's beam-5 rate, beam 50 exact slower by the CPU's
  measured factor; hours on the host, GPU-hours and their price."""
  def gpu_hours(beam: int) -> float:
    slowdown = _beam50_slowdown() if beam == 50 else 1.0
    return PARANMT_PAIRS * slowdown / _h100_bt_rate() / 3600
  out = {f"paranmt.{stage}_cpu_hours": functools.partial(_hours_at, rate)
         for stage, rate in _CPU_RATES.items()}
  out.update(_gran_gpu_values())
  for beam in (5, 50):
    out[f"paranmt.host_hours.beam{beam}"] = (
        lambda beam=beam: f"{gpu_hours(beam) / 8:.1f}")
    out[f"paranmt.gpu_hours.beam{beam}"] = (
        lambda beam=beam: f"{gpu_hours(beam):,.0f}")
    out[f"paranmt.dollars.beam{beam}"] = (lambda beam=beam: (
        f"{gpu_hours(beam) * _DOLLARS_PER_GPU_HOUR:,.0f}"))
  return out


def _gpu_nmt_step_s() -> float:
  """Seconds a step of the gpu preset's NMT training (configs/pipeline.py)
  on the H200, evaluations left out: the time to step 34 (both widths
  compiled), then the rest of its steps at the rate of steps 34-1,000."""
  steps = _gpu_preset().nmt.settings.train_steps
  _, t34 = _bar(H200_LOGS["preset"], "34/1000")
  _, t1000 = _bar(H200_LOGS["preset"], "1000/1000")
  return (t34 + (steps - 34) * (t1000 - t34) / (1000 - 34)) / steps


def _log_values() -> dict[str, Callable[[], str]]:
  """Figures of the GPU runs' logs: elapsed times read off progress bars,
  and the beam-50 back-translation projection built from them."""
  bars = {"h200.width8.step1": ("width8", "1/1000"),
          "h200.width8.step34": ("width8", "34/1000"),
          "h200.width8.step56": ("width8", "56/1000"),
          "h200.width8.step1000": ("width8", "1000/1000"),
          "h200.preset.step1": ("preset", "1/1000"),
          "h200.preset.step34": ("preset", "34/1000"),
          "h200.preset.step1000": ("preset", "1000/1000"),
          "h200.preset.bt64": ("preset", "64/600"),
          "h200.preset.bt576": ("preset", "576/600")}
  out = {name: (lambda log=log, done=done: quoted.duration(
      _bar(H200_LOGS[log], done)[1])) for name, (log, done) in bars.items()}
  out["h200.preset.dev_eval"] = lambda: quoted.duration(  # after step 1,000
      _bar(H200_LOGS["preset"], "1000/1000", last=True)[1]
      - _bar(H200_LOGS["preset"], "1000/1000")[1])
  out["h200.preset.nmt_step_s"] = lambda: f"{_gpu_nmt_step_s():.3f}"
  # session.sh's step after the bilingual evaluation: both splits'
  # sentences embedded (a `paraflax embed` process a side), then mined.
  out["h100.embed_and_mine_time"] = lambda: quoted.duration(
      _session_seconds("mining eval") - _session_seconds("bilingual eval"))
  out["h100.bt_wmt.rate"] = lambda: f"{_h100_bt_rate():.0f}"
  out["h100.bt_wmt.time"] = lambda: quoted.duration(
      _bar(_H100_WMT_BT, "N/N")[1])
  out["decode.beam50_slowdown"] = lambda: f"{_beam50_slowdown():.1f}"
  out["gpu.bt_beam50_projection"] = lambda: (  # a projection: whole minutes
      f"{_bt_projection_s() / 60:.0f} min")
  out["gpu.nmt_projection"] = lambda: _h100_minutes_for(
      "nmt_de", _gpu_preset().nmt.settings.train_steps)
  out["gpu.bilingual_projection"] = lambda: _h100_minutes_for(
      "bi_de", _gpu_preset().bilingual.settings.train_steps)
  out["gpu.score_projection"] = lambda: (  # the host's cores score them
      f"{_gpu_scoring_minutes():.0f} min")
  return out


def _h100_nmt_peak_rate() -> str:
  """The H100 NMT's fastest steps/s between two readings of its progress
  bar (nmt_de.train.log; evaluations inside a stretch count)."""
  path = os.path.join(RESULTS, H100_SESSION, "nmt_de.train.log")
  with open(path, encoding="utf-8") as f:
    bars = [(int(n), 60 * int(m) + int(sec)) for n, m, sec in re.findall(
        r"(\d+)/\d+ \[(\d+):(\d+)<", f.read())]
  rates = [(n2 - n1) / (t2 - t1) for (n1, t1), (n2, t2) in zip(bars, bars[1:])
           if t2 > t1]
  return f"{max(rates):.0f}"


def _h100_nmt_late_bleu() -> str:
  """The range of the H100 NMT's dev BLEU from step 4,000 on."""
  with open(os.path.join(RESULTS, H100_SESSION, "nmt_de.metrics.jsonl"),
            encoding="utf-8") as f:
    bleu = [m["dev/bleu"] for m in map(json.loads, f)
            if "dev/bleu" in m and m["step"] >= 4000]
  return f"{min(bleu):.1f}-{max(bleu):.1f}"


def _h100_nmt_dev_bleu() -> str:
  """The H100 NMT's dev BLEU at the checkpoint its evaluation read."""
  step = int(_session_figure(*_SESSION_FIGURES["nmt_de.step"][:2], str))
  with open(os.path.join(RESULTS, H100_SESSION, "nmt_de.metrics.jsonl"),
            encoding="utf-8") as f:
    found = [json.loads(line) for line in f]
  return next(f"{m['dev/bleu']:.2f}" for m in found
              if m.get("step") == step and "dev/bleu" in m)


def _h100_mining_f1() -> str:
  """Test F1 x 100 of the H100 model's mining (ratio margin, max)."""
  row = _mining_eval_row(
      f"lab/results/{H100_SESSION}/bi_de.mining_eval.json", "ratio", "max")
  return f"{100 * row['test_f1']:.1f}"


# The mining tables that docs/faq-mining.md's advice on retrieval reads.
_RETRIEVAL_TABLES = (f"lab/results/{H100_SESSION}/bi_de.mining_eval.json",
                     f"lab/results/runs/{PIPELINE}.json")


def _retrieval_count(retrieval: str, key: str, pick: Callable) -> str:
  """For how many (table, margin) of _RETRIEVAL_TABLES `retrieval` has the
  `pick` (max or min) of the test figure `key` (ties count), "N of M"."""
  found = []
  for file in _RETRIEVAL_TABLES:
    with open(os.path.join(run_results.ROOT, file), encoding="utf-8") as f:
      data = json.load(f)
    rows = data.get("mining", data)["rows"]  # a pipeline report nests them
    for margin in {r["margin"] for r in rows}:
      got = {r["retrieval"]: r[key] for r in rows if r["margin"] == margin}
      found.append(got[retrieval] == pick(got.values()))
  return f"{sum(found)} of {len(found)}"


def bilingual_alignment() -> list[str]:
  """Alignment recovery error %, mean of the two directions, of the H100
  model (its session's eval log) beside the 2,000-step CPU run (its
  evals.json), per test set."""
  path = os.path.join(RESULTS, H100_SESSION, "bi_de.eval.log")
  with open(path, encoding="utf-8") as f:
    h100 = {(m[0], m[2]): (int(m[1]), float(m[3])) for m in re.findall(
        r"^(\S+) +de +(\d+) +(cosine|csls) +\S+ +\S+ +([\d.]+)$",
        f.read(), re.M)}
  if not h100:
    raise ValueError(f"{os.path.relpath(path, run_results.ROOT)}: no "
                     "alignment rows of de (set, n, similarity, errors)")
  cpu = {(r["set"], r["similarity"]): r["mean"]
         for r in _report("config_runs/bilingual-de")["tests"]["rows"]}
  sets = dict.fromkeys(name for name, _ in h100)
  return markdown_table.table(
      ["test set", "n", "cosine (H100)", "CSLS (H100)", "cosine (CPU)",
       "CSLS (CPU)"],
      [(name, f"{h100[name, 'csls'][0]:,}", *(
          f"{h100[name, sim][1]:.1f}" for sim in ("cosine", "csls")), *(
              f"{cpu[name, sim]:.1f}" for sim in ("cosine", "csls")))
       for name in sets], numeric_from=1)


def bilingual_paracrawl() -> list[str]:
  """ParaCrawl de-en ROC-AUC x 100 and precision at the top 25 % of each
  scorer: the H100 model (its session's eval log) beside the 2,000-step
  CPU run (its evals.json); the baselines score without embeddings."""
  path = os.path.join(RESULTS, H100_SESSION, "bi_de.eval.log")
  with open(path, encoding="utf-8") as f:
    h100 = {(m[0], m[1]): (m[2], float(m[3]), float(m[4])) for m in re.findall(
        r"^(v\d+) +de +(\w+) +(similarity|baseline) +\d+ +[\d.]+ +([\d.]+)"
        r" +([\d.]+)$", f.read(), re.M)}
  if not h100:
    raise ValueError(f"{os.path.relpath(path, run_results.ROOT)}: no "
                     "ParaCrawl rows of de")
  cpu = {(r["release"], r["scorer"]): r
         for r in _report("config_runs/bilingual-de")["paracrawl"]["rows"]}

  def cells(release: str, scorer: str) -> tuple[str, str]:
    r = cpu.get((release, scorer))
    return (f"{100 * r['auc']:.1f}", f"{100 * r['precision']:.1f}") \
        if r else ("", "")
  return markdown_table.table(
      ["release", "scorer", "kind", "AUC (H100)", "P@25% (H100)",
       "AUC (CPU)", "P@25% (CPU)"],
      [(release, scorer, kind, f"{auc:.1f}", f"{p25:.1f}",
        *cells(release, scorer))
       for (release, scorer), (kind, auc, p25) in h100.items()],
      numeric_from=3)


def _sts_gap(better: str, worse: str) -> str:
  """How many STS12-15 points (Pearson x 100) kept run `worse` trails
  kept run `better`."""
  a, b = (_report(ref)["semeval_2012_2015"]["mean_pearson"]
          for ref in (better, worse))
  return f"{100 * (a - b):.1f}"


def _pivot_p1_range() -> str:
  """The P@1 x 100 of pivoting alone over the kept runs that rank a general
  table made afresh (each its own alignment): how far eflomal's unseeded
  sampling moves it."""
  p1 = [_report(PIVOT)["precision"]["p"]["p@1"],
        _report(PIVOT_1024)["precision"]["p"]["p@1"],
        # a table without MonoDS: its score column is p(e2|e1)
        _report(PPDB_GENERAL)["precision"]["score"]["p@1"]]
  return f"{100 * min(p1):.1f}-{100 * max(p1):.1f}"


# docs/domain.md's projection of the pivot to a corpus of this many pairs.
PROJECTED_PAIRS = 10_000_000


def _slowest(key: str) -> float:
  """The general table's slowest language at `key` (a rate of pivot's
  summary), the rate the projection assumes for every language."""
  return min(lang[key] for lang in _report(PIVOT_GENERAL)[
      "languages"].values())


def _phrases_per_pair() -> float:
  """Phrase pairs extracted per sentence pair, the most of any language."""
  return max(lang["phrase_pairs"] / lang["pairs"] for lang in _report(
      PIVOT_GENERAL)["languages"].values())


def _projection_values() -> dict[str, Callable[[], str]]:
  """docs/domain.md's projection to PROJECTED_PAIRS pairs a language from
  the general table's measured rates: alignment and extraction at the
  slowest language's rate, MonoDS's events a second at B = 256."""
  return {
      "align_rate": lambda: f"{_slowest('pairs_per_s'):,.0f}",
      "align_time": lambda: quoted.duration(
          PROJECTED_PAIRS / _slowest("pairs_per_s")),
      "phrases_per_pair": lambda: f"{_phrases_per_pair():.0f}",
      "extract_rate": lambda: f"{_slowest('phrase_pairs_per_s'):,.0f}",
      "extract_time": lambda: quoted.duration(
          PROJECTED_PAIRS * _phrases_per_pair()
          / _slowest("phrase_pairs_per_s")),
      "monods_rate": lambda: (
          f"{run_results.load(MONODS_GENERAL[256]).data['events_per_s']:,.0f}"),
  }


def _values() -> dict[str, Callable[[], str]]:
  out = {f"domain.projection.{key}": value
         for key, value in _projection_values().items()}
  for ref, figures in _QUOTED_RUNS:
    for key, figure in figures.items():
      out[f"{ref}.{key}"] = (lambda ref=ref, figure=figure:
                             figure(_report(ref)))
    for key in ("time", "hardware"):
      out[f"{ref}.{key}"] = (lambda ref=ref, key=key:
                             run_results.load(ref).about[key])
  for key, how in _SESSION_FIGURES.items():
    out[f"h100.{key}"] = lambda how=how: _session_figure(*how)
  out["h100.bi_de.mining_f1"] = _h100_mining_f1
  out["h100.nmt_de.dev_bleu"] = _h100_nmt_dev_bleu
  out["h100.nmt_de.dev_bleu_from_4000"] = _h100_nmt_late_bleu
  out["h100.nmt_de.peak_steps_per_s"] = _h100_nmt_peak_rate
  # The exact kernel's pairs a second on the H100: N = 50,000 both ways.
  out["h100.mining.pairs_per_s_512"] = lambda: (
      f"{5e4 ** 2 / float(out['h100.mining.ours_512']()) / 1e9:.1f}")
  out["paper_presets.minibatch_gap"] = functools.partial(
      _sts_gap, "paper_presets/avg-default", "paper_presets/avg-wieting2017")
  out["mining.max_retrieval_best"] = lambda: _retrieval_count(
      "max", "test_f1", max)
  out["mining.intersect_precision_best"] = lambda: _retrieval_count(
      "intersect", "test_precision", max)
  out["mining.intersect_recall_lowest"] = lambda: _retrieval_count(
      "intersect", "test_recall", min)
  out["gran_ablations.same_config_runs"] = _same_config_runs
  out["domain.general_pivot_p1_range"] = _pivot_p1_range
  return {**out, **_log_values(), **_caption_values(), **_paranmt_values()}


VALUES = _values()


TABLES = (headline, sts_encoders, filter_tables, paper_presets,
          pipeline_tiny, pipeline_tiny_mined, filtering_downstream,
          filtering_downstream_captions, filtering_downstream_budgets,
          paper_grids_overlap, paper_grids_lm, bilingual_alignment,
          domain_selection, domain_dev_grid, domain_abc_science,
          domain_no_pad, ppdb_agreement, pivot_general, bilingual_paracrawl,
          domain_bins, gran_ablations)
