"""The pipeline's report: `W/report.md`, with `W/report/report.json` (its
numbers, which a rerun after a kill reproduces) and the training-curve
PNGs it links (`W/report/<stage>_curve.png`)."""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from paraflax import files
from paraflax.training import metrics as metrics_lib

if TYPE_CHECKING:
  from paraflax.pipeline.plan import Plan

REPORT = "report.md"  # W/report.md; its plots and numbers in W/report/
# The stages whose metrics.jsonl we plot.
TRAINED = ("nmt", "words", "gran", "bilingual")
_TIMES = "times"  # report.json holds everything but the times


def _curve(path: str, rows: Sequence[dict], select: str, title: str) -> None:
  """Train loss by step, and the selected dev metric on a second axis."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, ax = plt.subplots(figsize=(6, 3.5))
  loss = [(r["step"], r["loss"]) for r in rows if "loss" in r]
  if loss:
    ax.plot(*zip(*loss), color="tab:blue", label="train loss")
  ax.set_xlabel("step")
  ax.set_ylabel("train loss", color="tab:blue")
  dev = [(r["step"], r[select]) for r in rows if select in r]
  if dev:
    other = ax.twinx()
    other.plot(*zip(*dev), color="tab:red", marker="o")
    other.set_ylabel(select, color="tab:red")
  ax.set_title(title, fontsize=9)
  fig.tight_layout()
  with files.atomic_output(path, "wb") as f:
    fig.savefig(f, format="png", dpi=100)
  plt.close(fig)


def metrics(workdir: str) -> list[dict]:
  path = os.path.join(workdir, metrics_lib.JSONL)
  if not os.path.exists(path):
    return []
  with open(path, encoding="utf-8") as f:
    return [json.loads(line) for line in f if line.strip()]


def _read_json(path: str) -> Any:
  with open(path, encoding="utf-8") as f:
    return json.load(f)


def _sts(done: dict) -> dict:
  result = _read_json(done["output"])
  rows = {name: {k: row[k] for k in ("n", "pearson", "spearman")}
          for name, row in result["datasets"].items()}
  means = result.get("semeval_2012_2015")
  return {"datasets": rows, "semeval_2012_2015": means}


def _benchmark(folder: str) -> dict:
  """A mining benchmark's scale and the command that built it."""
  from paraflax.evaluation import mining_set  # pylint: disable=g-import-not-at-top
  bench = mining_set.read(folder)
  built = bench.recipe.partition("`")[2].partition("`")[0]
  return {"src": len(bench.src), "tgt": len(bench.tgt),
          "gold": len(bench.gold),
          "distractors": [len(bench.src) - len(bench.gold),
                          len(bench.tgt) - len(bench.gold)],
          "built_by": built}


def _mined_sample(done: dict, n: int) -> list[dict]:
  """The `n` best-scored mined test pairs, their sentences, whether the
  benchmark holds them as gold, and whether they reach the dev threshold."""
  from paraflax.evaluation import mining_set  # pylint: disable=g-import-not-at-top
  bench = mining_set.read(done["test"])
  threshold = done.get("threshold")
  sample = []
  with open(done["mined"], encoding="utf-8") as f:
    for line in f:
      if len(sample) == n:
        break
      score, src, tgt = line.rstrip("\n").split("\t")
      pair = (int(src), int(tgt))
      sample.append({"score": float(score), "src": bench.src[pair[0]],
                     "tgt": bench.tgt[pair[1]], "gold": pair in bench.gold,
                     "kept": threshold is None or float(score) >= threshold})
  return sample


def _start(done: dict, stage: str) -> dict | None:
  """What a trained stage started from, scored by its selected metric:
  its step-0 evaluation where its metrics hold one, else, for the GRAN,
  the words stage's vectors it started from (their best, scored by the
  same metric as an Avg encoder). {"value", "of"} or None."""
  select = done[stage]["select"]
  workdir = done[stage]["workdir"]
  first = [r[select] for r in metrics(workdir)
           if r.get("step") == 0 and select in r]
  if first:
    return {"value": first[0], "of": "its step-0 evaluation"}
  words = done.get("words")
  if (stage == "gran" and words and words["select"] == select
      and words["best"] is not None):
    return {"value": words["best"], "of": "the words stage's vectors it "
            "started from, as an Avg encoder"}
  return None


# What to try when a stage scores below its start.
_TRY = {
    "gran": "more or cleaner pairs (a better NMT: more "
            "nmt.settings.train_steps; a filter that keeps fewer, better "
            "pairs: filter.lo / filter.hi, max_pairs) or fewer "
            "gran.settings.train_steps; or use the words' Avg encoder "
            "(W/words) itself",
}
_TRY_ANY = ("fewer {stage}.settings.train_steps or a lower learning rate "
            "(optimizer.learning_rate of the stage's config file), and a "
            "look at data.train (docs/your-data.md)")


def numbers(plan: Plan, stages: Sequence[str]) -> dict:
  """What the report shows, from the finished stages' records and files."""
  done = {s: plan.done(s) for s in stages}
  out: dict[str, Any] = {"preset": plan.config.preset,
                         "lang": plan.config.lang}
  for stage in TRAINED:
    if stage in done:
      out[stage] = {k: done[stage][k] for k in ("steps", "select", "best")}
      start = _start(done, stage)
      if start is not None:
        out[stage]["start"] = start
  if "backtranslate" in done:
    out["backtranslate"] = {k: done["backtranslate"][k]
                            for k in ("sentences", "records")}
  if "score" in done:
    out["score"] = {k: done["score"][k]
                    for k in ("records", "filter", "max_pairs", "pairs")}
  if "sts" in done:
    out["sts"] = _sts(done["sts"])
  if "mining" in done:
    m = done["mining"]
    out["mining"] = {"margin": m["margin"], "retrieval": m["retrieval"],
                     "threshold": m.get("threshold"),
                     "test": {k: m[f"test_{k}"]
                              for k in ("precision", "recall", "f1")},
                     "benchmarks": {s: _benchmark(m[s])
                                    for s in ("dev", "test")},
                     "rows": _read_json(m["table"])["rows"],
                     "sample": _mined_sample(m, plan.config.mining.sample)}
  out[_TIMES] = {s: done[s]["seconds"] for s in stages}
  return out


def _pct(value: float | None) -> str:
  return "-" if value is None else f"{100 * value:.2f}"


def _sts_table(sts: dict) -> list[str]:
  lines = ["| dataset | n | Pearson x 100 | Spearman x 100 |",
           "|---|---:|---:|---:|"]
  for name, row in sts["datasets"].items():
    lines.append(f"| {name} | {row['n']} | {_pct(row['pearson'])} | "
                 f"{_pct(row['spearman'])} |")
  means = sts["semeval_2012_2015"]
  if means:
    for kind in ("mean", "weighted"):
      lines.append(f"| **STS12-15 {kind}** | {means['n']} | "
                   f"{_pct(means[f'{kind}_pearson'])} | "
                   f"{_pct(means[f'{kind}_spearman'])} |")
  return lines


def _mining_table(mining: dict) -> list[str]:
  lines = ["| margin | retrieval | dev threshold | dev P / R / F1 | test P / "
           "R / F1 (dev threshold) | test F1, no threshold |",
           "|---|---|---:|---|---|---:|"]
  for r in mining["rows"]:
    chosen = (r["margin"], r["retrieval"]) == (mining["margin"],
                                               mining["retrieval"])
    mark = "**" if chosen else ""
    threshold = "-" if r["threshold"] is None else f"{r['threshold']:.4f}"
    prf = [" / ".join(_pct(r[f"{g}_{m}"]) for m in ("precision", "recall",
                                                     "f1"))
           for g in ("dev", "test")]
    lines.append(f"| {mark}{r['margin']}{mark} | {mark}{r['retrieval']}"
                 f"{mark} | {threshold} | {prf[0]} | {prf[1]} | "
                 f"{_pct(r['test_all_f1'])} |")
  return lines


def _scale(split: str, b: dict) -> str:
  distractors = b["distractors"]
  each = (f"{distractors[0]}" if distractors[0] == distractors[1] else
          f"{distractors[0]} / {distractors[1]}")
  return (f"- **{split}**: {b['src']} source and {b['tgt']} English "
          f"sentences, {b['gold']} gold pairs among {each} distractors a "
          f"side (`{b['built_by']}`)")


def _mining_section(m: dict) -> list[str]:
  """The benchmarks' scale, P/R/F1 of every margin x retrieval, the chosen
  one's test P/R/F1 and its best-scored mined pairs with their gold marks."""
  test, sample = m["test"], m["sample"]
  threshold = ("no threshold" if m["threshold"] is None
               else f"the dev threshold {m['threshold']:.4f}")
  right = sum(p["gold"] for p in sample)
  kept = [p for p in sample if p["kept"]]
  lines = ["## Mining (bilingual encoders)", "",
           "Benchmarks: gold translation pairs hidden among distractors, "
           "sentences with no translation on the other side; each side "
           "shuffled.", "",
           *(_scale(s, b) for s, b in m["benchmarks"].items()), "",
           f"Mined with {m['margin']} / {m['retrieval']} at {threshold}: "
           f"test precision {_pct(test['precision'])}, recall "
           f"{_pct(test['recall'])}, F1 {_pct(test['f1'])} (x 100).", "",
           "### P/R/F1 x 100 of every margin and retrieval (the one mined "
           "with in bold)", "", *_mining_table(m), "",
           f"### The {len(sample)} best-scored mined test pairs: {right} "
           f"correct, {len(sample) - right} wrong", "",
           f"{len(kept)} of them reach {threshold}. correct: the benchmark's "
           "gold pair; wrong: any other pair.", "",
           "| score | source | English | gold |", "|---:|---|---|---|"]
  lines += [f"| {p['score']:.4f} | {_cell(p['src'])} | {_cell(p['tgt'])} "
            f"| {'correct' if p['gold'] else 'wrong'} |" for p in sample]
  return lines


def _cell(text: str) -> str:
  return text.replace("|", "\\|")


def _below_start(stage: str, t: dict) -> list[str]:
  """A flag line when the stage's best scores below what it started from."""
  start = t.get("start")
  if not start or t["best"] is None or t["best"] >= start["value"]:
    return []
  tries = _TRY.get(stage, _TRY_ANY.format(stage=stage))
  return [f"  - **{stage} scored {t['best']:.4f}, below its start "
          f"{start['value']:.4f}** ({t['select']}; its start: {start['of']}): "
          f"its training lowered the score. Try {tries}."]


def markdown(found: dict, curves: Sequence[str]) -> str:
  lines = [f"# paraflax pipeline report: preset {found['preset']}, "
           f"{found['lang']}-en", ""]
  for stage in TRAINED:
    if stage in found:
      t = found[stage]
      best = "-" if t["best"] is None else f"{t['best']:.4f}"
      lines.append(f"- **{stage}**: {t['steps']} steps, best {t['select']} "
                   f"{best}")
      lines += _below_start(stage, t)
  if "backtranslate" in found:
    b = found["backtranslate"]
    lines.append(f"- **backtranslate**: {b['sentences']} sentences, "
                 f"{b['records']} n-best records")
  if "score" in found:
    s = found["score"]
    lines.append(f"- **score + filter**: {s['records']} records scored; "
                 f"filter {s['filter']}, max_pairs {s['max_pairs']}: "
                 f"{s['pairs']} pairs for the GRAN")
  lines += ["", "## Training curves", ""]
  lines += [f"![{c}](report/{c}_curve.png)" for c in curves]
  if "sts" in found:
    lines += ["", "## STS (GRAN, plain cosine, best checkpoint)", "",
              *_sts_table(found["sts"])]
  if "mining" in found:
    lines += ["", *_mining_section(found["mining"])]
  lines += ["", "## Time per stage (the run that finished it)", "",
            "| stage | seconds |", "|---|---:|"]
  lines += [f"| {s} | {t:.1f} |" for s, t in found[_TIMES].items()]
  lines.append(f"| **total** | {sum(found[_TIMES].values()):.1f} |")
  return "\n".join(lines) + "\n"


def write(plan: Plan, stages: Sequence[str]) -> dict:
  """Writes the report of the finished `stages`; its summary."""
  folder = plan.folder("report")
  found = numbers(plan, stages)
  curves = []
  for stage in TRAINED:
    if stage in found:
      workdir = plan.done(stage)["workdir"]
      _curve(os.path.join(folder, f"{stage}_curve.png"), metrics(workdir),
             found[stage]["select"], f"{stage}: {workdir}")
      curves.append(stage)
  kept = {k: v for k, v in found.items() if k != _TIMES}
  numbers_path = os.path.join(folder, "report.json")
  files.write_text_atomic(numbers_path, json.dumps(kept, indent=2) + "\n")
  path = os.path.join(plan.workdir, REPORT)
  files.write_text_atomic(path, markdown(found, curves))
  print(markdown(found, curves), flush=True)
  return {"report": os.path.abspath(path),
          "numbers": os.path.abspath(numbers_path), "curves": curves}
