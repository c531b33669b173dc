"""The tables of lab/benchmarks/README.md, each from the JSON its benchmark
wrote to lab/results/ (`<benchmark>.<variant>.<hardware>.json`)."""
from __future__ import annotations

import functools
import glob
import json
import os

import markdown_table
import mining_peer_tables
import run_results

_f = markdown_table.num

BENCH = os.path.join(run_results.ROOT, "lab", "results")


def _load(name: str) -> dict:
  with open(os.path.join(BENCH, name), encoding="utf-8") as f:
    return json.load(f)


def _table(columns, rows, numeric_from=1) -> list[str]:
  return markdown_table.table(columns, rows, numeric_from)


# The CPU kinds whose encoders_vs_wieting.py runs (taking turns, and
# --quality) the tables, the prose and performance.md quote.
ENCODER_CPUS = ("amd-epyc", "intel-xeon")


def encoders_quality() -> list[str]:
  """encoders_vs_wieting.py --quality: the same Avg after the same updates,
  ours / Wieting's, a row per run."""
  rows = []
  for d in per_cpu("encoders_vs_wieting", (".quality",)):
    r = d["results"][0]
    where = markdown_table.recorded_cpu_cell(d["hardware"])
    ours, theirs = r["ours"], r["wieting"]
    rows.append((where, r["updates"], *(
        f"{_f(ours['figures'][k])} / {_f(theirs['figures'][k])}"
        for k in ("STSb dev", "STSb test", "STS12-15 mean")),
                 f"{_f(ours['train_s'], 1)} / {_f(theirs['train_s'], 1)}"))
  return _table(["CPU", "Avg updates"] + [
      f"{k}: ours / Wieting's" for k in (
          "STSb dev", "STSb test", "STS12-15 mean",
          "training wall time (s)")], rows, numeric_from=1)


_RULES = ("exact", "k_finished", "best_ended", "best_ended_k")


def trained_decodes() -> list[tuple[str, dict]]:
  """(CPU and cores, result) of nmt_vs_opennmt.py --onmt-model for each CPU
  kind that has one."""
  names = _kept_per_cpu_kind("nmt_vs_opennmt.trained")
  return [(markdown_table.named_cpu_cell(name, d), d)
          for name, d in zip(names, map(_load, names))]


def nmt_decoding() -> list[str]:
  """nmt_vs_opennmt.py with trained models: beam search sentences/s, per
  CPU kind measured."""
  rows = []
  for cpu, d in trained_decodes():
    for b in d["decode"]:
      ours, peer = b["ours_trained"], b["opennmt"]
      ratios = [b["sentences_per_s_ratio_ours_over_opennmt"][r]
                for r in _RULES]
      rows.append((cpu, onmt_vocabulary(d), b["beam"],
                   " / ".join(_f(ours[r]["sentences_per_s"], 1)
                              for r in _RULES),
                   _f(peer["sentences_per_s"], 1),
                   markdown_table.slower(" / ".join(map(_f, ratios)), ratios),
                   f"{_f(ours['exact']['bleu'])} / {_f(peer['bleu'])}",
                   f"{_f(ours['exact']['length_ratio'])} / "
                   f"{_f(peer['length_ratio'])}"))
  return _table(["CPU", "OpenNMT-py vocabulary", "beam",
                 "ours, sentences/s (exact / k_finished / best_ended / "
                 "best_ended_k)", "OpenNMT-py 3.0.4", "ours / OpenNMT-py",
                 "BLEU ours (exact) / OpenNMT-py",
                 "output length / reference's: ours (exact) / OpenNMT-py"],
                rows, numeric_from=2)


def _nmt_setting(side: dict) -> str:
  """Ours, named by the settings the compared workdirs differ in."""
  m, loss = side["model"], side["loss"]
  return (f"ours: bridge `{m['bridge']}`, input feeding "
          f"{'on' if m['input_feeding'] else 'off'}, loss per "
          f"{loss['normalize'].rstrip('s')}")


def _kept_per_cpu_kind(stem: str) -> list[str]:
  """The result files STEM.HOST.json kept for the CPU kinds of
  markdown_table.CPU_KINDS, in that order."""
  return [name for host in markdown_table.CPU_KINDS if os.path.exists(
      os.path.join(BENCH, name := f"{stem}.{host}.json"))]


def learning_results() -> list[tuple[str, dict]]:
  """nmt_learning_vs_opennmt.py's runs: (CPU and cores, result) for each
  CPU kind that has one."""
  names = _kept_per_cpu_kind("nmt_learning_vs_opennmt")
  return [(markdown_table.named_cpu_cell(name, d), d)
          for name, d in zip(names, map(_load, names))]


def _input_feeding(learning: dict) -> dict:
  """The default config's side (input feeding, `mean_tanh`) of a
  nmt_learning_vs_opennmt.py result."""
  return next(o for o in learning["ours"] if o["model"]["input_feeding"]
              and o["model"]["bridge"] == "mean_tanh")


def nmt_learning() -> list[str]:
  """nmt_learning_vs_opennmt.py: dev BLEU after the same steps, per CPU."""
  rows = []
  for hardware, d in learning_results():
    steps = sorted(d["opennmt"]["dev"], key=int)
    peer = ("OpenNMT-py 3.0.4, "
            + _vocabulary_cell(d["opennmt"].get("vocabulary")))
    for name, side in [(peer, d["opennmt"])] + [
        (_nmt_setting(o), o) for o in d["ours"]]:
      dev = side.get("dev") or {}
      full = side.get("dev_all") or {}
      rows.append((hardware, name,
                   *(_f(dev.get(s, {}).get("bleu")) for s in steps),
                   _f(full.get("bleu"))))
  return _table(["hardware", "model",
                 *(f"dev BLEU at {int(s):,}" for s in steps),
                 "newstest2013 BLEU (all 3,000)"], rows, numeric_from=2)


def _decoder_change(side: dict, paper: dict) -> str:
  """The overrides that turn the paper's decoder (`paper`) into `side`."""
  changes = [f"`{group}.{key}={json.dumps(value).strip(chr(34))}`"
             for group in ("model", "loss")
             for key, value in side[group].items()
             if paper[group].get(key) != value]
  return " + ".join(changes) or "none (the paper's decoder)"


def nmt_decoder_changes() -> list[str]:
  """nmt_learning_vs_opennmt.py: each difference from the paper's decoder
  trained alone, with the length of its outputs, per CPU
  (docs/nmt-backtranslation.md)."""
  rows = []
  for hardware, d in learning_results():
    paper = d["ours"][0]
    steps = sorted(paper["dev"], key=int)
    for name, side in [(_decoder_change(o, paper), o) for o in d["ours"]] + [
        ("OpenNMT-py 3.0.4, same pairs, subwords and sizes", d["opennmt"])]:
      last = side["dev"][steps[-1]]
      rows.append((hardware, name,
                   " / ".join(_f(side["dev"][s]["bleu"]) for s in steps),
                   _f(last["length_ratio"]), f"{last['hit_max_output']:.1f} %",
                   _f((side.get("dev_all") or {}).get("bleu"))))
  return _table(["hardware", "change",
                 "dev BLEU at " + " / ".join(steps), f"hyp:ref at {steps[-1]}",
                 "at the output limit", "newstest2013 BLEU"], rows,
                numeric_from=3)


def equal_wall_runs() -> list[tuple[str, dict]]:
  """nmt_equal_wall.py's runs: (run, result) for each CPU kind that has
  them, in markdown_table.CPU_KINDS order."""
  return [(variant.strip(".") or "cores 0 / 1", _load(name))
          for host in markdown_table.CPU_KINDS
          for variant in ("", ".cores-swapped")
          if os.path.exists(os.path.join(
              BENCH, name := f"nmt_equal_wall{variant}.{host}.json"))]


def nmt_equal_wall() -> list[str]:
  """nmt_equal_wall.py: newstest2013 BLEU after the same 30 minutes, the
  peer's row naming its vocabularies."""
  rows = []
  for run, d in equal_wall_runs():
    for side in ("ours", "opennmt"):
      s = d[side]
      rows.append((markdown_table.hardware_cell(d), run,
                   "ours" if side == "ours"
                   else f"OpenNMT-py 3.0.4, {onmt_vocabulary(d)}",
                   f"{s['steps']:,}", _f(s["target_tokens_per_s"], 0),
                   _f(s["newstest2013"]["bleu"])))
  return _table(["hardware (1-min load at start)", "run", "side",
                 "steps in 30 min", "target tokens/s",
                 "newstest2013 BLEU, beam 5"], rows, numeric_from=3)


def nmt_decode_phases() -> list[str]:
  """nmt_decode_phases.py: phases (SHRINK) against compile and speed, per
  CPU kind measured."""
  rows = []
  for name in _kept_per_cpu_kind("nmt_decode_phases"):
    d = _load(name)
    rows += [(markdown_table.hardware_cell(d), r["beam"], r["shrink"],
              ", ".join(map(str, r["phases"])),
              "yes" if r["same_1best_as_first"] else "no",
              _f(r["compile_and_first_batches_s"], 1),
              _f(r["sentences_per_s"], 1)) for r in d["rows"]]
  return _table(["hardware (1-min load at start)", "beam", "SHRINK",
                 "batch rows per phase", "1-best as at the first SHRINK",
                 "compile + first batches (s)", "sentences/s"], rows,
                numeric_from=5)


def nmt_step_profile() -> list[str]:
  """nmt_step_profile.py: each side's profiled train step by kind of
  operation, per 1,000 target tokens, per result file."""
  def with_step(side: dict) -> tuple[dict, dict]:
    """(ms per 1,000 target tokens, share) by kind, the whole step last."""
    per = side["kinds_ms_per_1k_target_tokens"]
    return ({**per, "the whole step": sum(per.values())},
            {**side["shares"], "the whole step": 1.0})

  rows = []
  for d in per_cpu("nmt_step_profile.encoder-128-", ("2core", "1core")):
    (ours, our_share), (theirs, their_share) = map(
        with_step, (d["ours"], d["opennmt"]))
    for kind in ours:
      per, share = (ours[kind], theirs[kind]), (our_share[kind],
                                                their_share[kind])
      rows.append((f"{markdown_table.hardware_cell(d)}, {d['cores']} "
                   f"thread{'s' if d['cores'] > 1 else ''} a side", kind,
                   _f(per[0], 0), _f(per[1], 0),
                   # A ratio of a few milliseconds' noise says nothing.
                   f"{per[0] / per[1]:.2f}x" if min(per) >= 5 else "",
                   f"{100 * share[0]:.0f} %", f"{100 * share[1]:.0f} %"))
  return _table(["hardware (1-min load at start)", "operations",
                 "ours (ms per 1,000 target tokens)", "OpenNMT-py's",
                 "ours / OpenNMT-py's", "share of our step",
                 "share of OpenNMT-py's"], rows, numeric_from=2)


def _by(name: str) -> dict:
  d = _load(name)
  return {(r["method"], r["n"], r["devices"]): r["total_s"]
          for r in d["results"] if r.get("status") == "ok"}


def mining_kernel_or_ops() -> list[str]:
  """mining_throughput.py with our top-k kernel and with XLA's ops."""
  rows = []
  for dim in (256, 512):
    kernel = _by(f"mining_throughput.d{dim}.amd-epyc-2core.json")
    ops = _by(f"mining_throughput.d{dim}.xla-ops.amd-epyc-2core.json")
    for n in sorted({k[1] for k in kernel}):
      k, o = kernel[("ours", n, 1)], ops[("ours", n, 1)]
      rows.append((dim, f"{n:,}", _f(k), _f(o),
                   _f(kernel[("faiss", n, 1)] / k) + "x",
                   _f(ops[("faiss", n, 1)] / o) + "x"))
  return _table(["d", "N", "ours, kernel (s)", "ours, XLA's ops (s)",
                 "faiss / ours, kernel", "faiss / ours, XLA's ops"], rows,
                numeric_from=0)


# One lent H200's mining and compiled programs (lab/benchmarks/gpu/scale.sh).
GPU_SCALE = "gpu_scale.mining-compile.nvidia-h200"


def _same_gpu() -> tuple[dict, dict[tuple[str, int], dict], list[int]]:
  """The GPU mining file, its finished rows by (method, N), and its Ns."""
  d = _load(f"{GPU_SCALE}/mining_throughput.d512.json")
  ok = {(r["method"], r["n"]): r for r in d["results"]
        if r.get("status") == "ok"}
  return d, ok, sorted({n for _, n in ok})


def mining_same_gpu() -> list[str]:
  """mining_throughput.py on one GPU: ours against sentence-transformers'
  semantic_search on the same GPU, with each side's start-up apart."""
  _, ok, sizes = _same_gpu()
  rows = []
  for n in sizes:
    ours, theirs = ok[("ours", n)], ok[("sentence_transformers", n)]
    roof = ok.get(("roofline_jax", n))
    rows.append((
        f"{n:,}", _f(ours["total_s"]), _f(ours["compile_s"], 1),
        _f(ours["device_peak_mib"] / 1024, 1), _f(theirs["total_s"]),
        f"{theirs['query_chunk_size']:,}", _f(theirs["warmup_s"], 1),
        _f(theirs["device_peak_mib"] / 1024, 1),
        f"{ours['pairs']:,} / {theirs['pairs']:,}",
        _f(theirs["total_s"] / ours["total_s"]) + "x",
        _f(roof["total_s"]) if roof else "not run"))
  return _table(["N", "ours (s)", "ours' first call compiling (s)",
                 "ours' device peak (GiB)", "semantic_search both ways + "
                 "margin (s)", "its best query chunk",
                 "its first call (s)", "its device peak (GiB)",
                 "pairs (ours / theirs)", "theirs / ours",
                 "one product, jax (s)"], rows, numeric_from=0)


_PIECES = ("product", "row_top_k", "column_top_k", "step", "kernel_top_k",
           "step_kernel")


# An Intel Xeon file's name, by run: the first (on a Rocket Lake, or of
# no recorded generation) and its rerun beside it on an Emerald Rapids.
INTEL_RERUNS = ("", "-emerald-rapids")


def rerun_last(path: str) -> tuple[str, bool]:
  """Sort key of result files: an Intel Xeon rerun right after its first."""
  return path.replace(INTEL_RERUNS[1], ""), INTEL_RERUNS[1] in path


def per_cpu(stem: str, variants: tuple[str, ...] = ("",)) -> list[dict]:
  """The result files STEM{variant}.HOST.json kept, for the CPU kinds of
  markdown_table.CPU_KINDS in that order, each Intel Xeon variant followed
  by its rerun on an Emerald Rapids (INTEL_RERUNS) where one was kept."""
  return [_load(name) for host in markdown_table.CPU_KINDS
          for rerun in INTEL_RERUNS for variant in variants
          if os.path.exists(os.path.join(
              BENCH, name := f"{stem}{variant}{rerun}.{host}.json"))]


def mining_tile_profile() -> list[str]:
  """mining_tile_profile.py: one [8192, 7168] tile, wall ms, per CPU and
  build."""
  rows = []
  for d in per_cpu("mining_tile_profile.d256",
                   ("", ".avx2-build", ".portable-build")):
    ms = d["runs"][0]["ms"]
    rows.append((markdown_table.hardware_cell(d), f"`{d['cxx']}`",
                 *(_f(ms[p]["wall_ms"], 1) for p in _PIECES)))
  return _table(["hardware (1-min load at start)", "build (CXX)", "product",
                 "rows' top-k (XLA)", "columns' top-k (XLA)", "step (XLA)",
                 "both top-k (kernel)", "step (kernel)"], rows,
                numeric_from=2)


def mining_index_build() -> list[str]:
  """mining_index_build.py: one side's index, ours against faiss's train
  and add, a row per repeat."""
  rows = []
  for d in per_cpu("mining_index_build.1e5"):
    for i, r in enumerate(d["repeats"], start=1):
      ours, peer = r["paraflax"], r["faiss"]
      rows.append((markdown_table.hardware_cell(d), i, _f(ours["build_s"], 1),
                   _f(ours["train_and_rest_s"], 1), _f(ours["add_s"], 1),
                   _f(ours["write_s"], 1), _f(peer["build_s"], 1),
                   _f(peer["train_s"], 1), _f(peer["add_s"], 1),
                   _f(ours["build_s"] / peer["build_s"]) + "x"))
  return _table(["hardware (1-min load at start)", "repeat", "ours (s)",
                 "ours: train and the rest", "ours: add", "ours: write",
                 "faiss (s)", "faiss: train", "faiss: add",
                 "ours / faiss, time"], rows)


def mining_devices_product() -> list[str]:
  """mining_devices_product.py: one query block's products, alternated."""
  rows = []
  for d in per_cpu("mining_devices_product.d256"):
    runs: dict[int, list[str]] = {}
    for n, ms in d["runs_ms"]:
      runs.setdefault(n, []).append(_f(ms, 1))
    rows += [(markdown_table.hardware_cell(d), n, ", ".join(ms))
             for n, ms in runs.items()]
  return _table(["hardware (1-min load at start)", "simulated devices",
                 "one query block's products (ms), each run"], rows)


# The hosts a benchmark pair (a run and its companion) ran on, by the
# files' last name.
PAIRED_HOSTS = ("intel-xeon-2core",)


def _paired(first: str, second: str) -> list[tuple[dict, dict]]:
  """(FIRST.HOST.json, SECOND.HOST.json) for each host that has both."""
  return [(_load(f"{first}.{h}.json"), _load(f"{second}.{h}.json"))
          for h in PAIRED_HOSTS
          if os.path.exists(os.path.join(BENCH, f"{first}.{h}.json"))]


def bilingual_throughput() -> list[str]:
  """bilingual_throughput.py: encoding and scoring, 1 and 8 devices."""
  rows = []
  for main, csls in _paired("bilingual_throughput",
                            "bilingual_throughput.csls"):
    for r, c in zip(main["results"], csls["results"]):
      enc, sc = r["encoding"], r["scoring"]
      rows.append((markdown_table.hardware_cell(main), r["devices"],
                   _f(enc["de"]["sentences_per_s"], 0),
                   _f(enc["en"]["sentences_per_s"], 0),
                   *(_f(sc[s]["pairs_per_s"], 0)
                     for s in ("cosine", "euclidean", "mlp")),
                   _f(c["scoring"]["csls"]["pairs_per_s"], 0),
                   _f(r["peak_rss_mib"], 0)))
  pairs = csls["results"][0]["scoring"]["csls"]["pairs"]
  return _table(["hardware (1-min load at start)", "devices",
                 "encode de (sentences/s)", "encode en", "cosine (pairs/s)",
                 "Euclidean", "MLP", f"CSLS ({pairs:,} pairs)",
                 "peak RSS (MiB)"], rows)


def result_files(pattern: str) -> list[dict]:
  """The result files `pattern` globs, recorded ones (by their CPU) first."""
  return [_load(os.path.basename(p)) for p in sorted(
      glob.glob(os.path.join(BENCH, pattern)), reverse=True)]


def scoring_throughput() -> list[str]:
  """scoring_throughput.py: records/s per scorer and of the command, a
  block of rows per run; the --beam runs after them."""
  runs = result_files("scoring_throughput.*.json")
  beams = [d for d in runs if "beam_base" in d["sizes"][0]["measures"]]
  plain = [d for d in runs if d not in beams]
  rows = []
  for d in plain:
    for name in ("parse", "overlap_1", "bleu", "lm_ppl", "ref_prob",
                 "command_base", "command_all"):
      cells = [size["measures"][name] for size in d["sizes"]]
      rows.append((markdown_table.hardware_cell(d), f"`{name}`",
                   *(_f(c["records_per_s"], 0) for c in cells),
                   _f(cells[-1]["peak_rss_mib"], 0),
                   _f(cells[-1]["paranmt_hours"], 1)))
  for d in beams:
    beam = d["sizes"][0]["measures"]
    for name in ("beam_base", "beam_all"):
      rows.append((markdown_table.hardware_cell(d),
                   f"`{name}` (Beam DirectRunner, {beam[name]['records']:,})",
                   _f(beam[name]["records_per_s"], 0), "", "", ""))
  return _table(["hardware (1-min load at start)", "measure",
                 *(f"{s['records']:,} records (records/s)"
                   for s in plain[0]["sizes"]),
                 "peak RSS (MiB)", "50M records (hours)"], rows,
                numeric_from=2)


def domain_throughput() -> list[str]:
  rows = [(markdown_table.hardware_cell(d), f"{s['sentences']:,}", name,
           _f(m["sentences_per_s"], 0), _f(m["seconds"], 1),
           _f(m["peak_rss_mib"], 0), _f(m["projected_hours"], 1))
          for d in result_files("domain_throughput.*.json")
          for s in d["sizes"] for name, m in s["measures"].items()]
  return _table(["hardware (1-min load at start)", "general pairs",
                 "measure", "pairs/s", "s", "peak RSS (MiB)",
                 "50M pairs (hours)"], rows, numeric_from=3)


def pivot_throughput() -> list[str]:
  rows = []
  for d, table in _paired("pivot_throughput", "pivot_throughput.table"):
    a, where = d["align_extract"], markdown_table.hardware_cell(d)
    rows += [(where, "alignment (sentence pairs/s)", _f(a["pairs_per_s"], 0),
              _f(a["peak_rss_mib"], 0)),
             (where, "phrase extraction (phrase pairs/s)",
              _f(a["phrase_pairs_per_s"], 0), "")]
    rows += [(where, f"LSH signature updates, {r['devices']} simulated "
              f"device{'s' * (r['devices'] > 1)} (events/s)",
              _f(r["updates_per_s"], 0), _f(r["peak_rss_mib"], 0))
             for r in d["lsh"]]
    rows += [(markdown_table.hardware_cell(table),
              f"table step, {t['copies']} x the parts ({t['lines']:,} lines;"
              " phrase pairs/s)", _f(t["phrase_pairs_per_s"], 0),
              _f(t["peak_rss_mib"], 0)) for t in table["table"]]
  return _table(["hardware (1-min load at start)", "part", "rate",
                 "peak RSS (MiB)"], rows, numeric_from=2)


MONODS_WEIGHTS = "monods_weights.general-256.intel-xeon-2core.json"


def monods_weights() -> list[str]:
  """monods_weights.py: PPDB agreement x 100 of the general table reranked
  with B = 256 signatures at each weight w (w = 0: pivoting alone, 1:
  MonoDS alone), recomputed from its p= and monods= columns; every
  weight that ties the best as printed is bold."""
  rows = _load(MONODS_WEIGHTS)["sweep"]["rows"]
  best = {k: f"{max(r[k] for r in rows):.1f}" for k in ("p@1", "p@5")}
  return _table(["w", "P@1", "P@5"], [
      (f"{r['weight']:g}", *(markdown_table.bold_if(f"{r[k]:.1f}",
                                                   f"{r[k]:.1f}" == best[k])
                             for k in ("p@1", "p@5"))) for r in rows])


def compile_cache() -> list[str]:
  rows = [(markdown_table.hardware_cell(d), name.replace("_", ", "),
           _f(r["seconds"], 1), _f(r["first_step_seconds"], 1),
           _f(r["cpu_seconds"], 1))
          for d in result_files("compile_cache.nmt.*.json")
          for name, r in d["runs"].items()]
  rows += [(markdown_table.hardware_cell(tests),
            f"tests/test_training.py, {name.replace('_', ' ')}",
            _f(tests[name]["wall_seconds"], 1), "",
            _f(tests[name]["user_seconds"] + tests[name]["sys_seconds"], 1))
           for tests in result_files("compile_cache.tests.*.json")
           for name in ("off", "session_cache")]
  return _table(["hardware (1-min load at start)", "run", "wall (s)",
                 "to the first step (s)", "CPU (s)"], rows, numeric_from=2)


def cores_used(d: dict) -> int:
  """The cores a result ran on: `cores` (its affinity) or all."""
  return len(d.get("cores") or range(d["cpu_count"]))


def encoder_speed_results() -> list[tuple[str, str, dict]]:
  """(hardware cell, how the two sides ran, result) of each speed run of
  encoders_vs_wieting.py, `encoders_vs_wieting.<variant>.<hardware>.json`."""
  out = []
  found = {path: _load(os.path.basename(path)) for path in glob.glob(
      os.path.join(BENCH, "encoders_vs_wieting.*.json"))}
  for path, d in sorted(found.items(), key=lambda item: (
      *markdown_table.machine(item[1]["hardware"]), item[0])):
    if any(r.get("updates") for r in d["results"]):  # a --quality run
      continue
    rounds = d["results"][0]["rounds"]
    out.append((markdown_table.named_cpu_cell(path, d),
                f"taking turns, {rounds} runs a side, median", d))
  return out


def _taking_turns(cpu: str) -> dict:
  """The encoders' speed run on `cpu` with the two sides taking turns."""
  return _load(f"encoders_vs_wieting.interleaved.{cpu}-2core.json")


def _encoder_ratio(cpu: str, model: str) -> str:
  row = next(r for r in _taking_turns(cpu)["results"] if r["model"] == model)
  return f"{row['ours_over_wieting']:.1f}"


# The figures that prose quotes from the benchmarks (render_tables' values).
def _encoder_quality(cpu: str, side: str) -> str:
  """STSb test x 100 of one side's Avg in the --quality run on `cpu`."""
  row = _load(f"encoders_vs_wieting.quality.{cpu}-2core.json")["results"][0]
  return f"{row[side]['figures']['STSb test']:.1f}"


VALUES = {f"encoders_vs_wieting.{cpu}.{model}": functools.partial(
    _encoder_ratio, cpu, model) for cpu in ENCODER_CPUS
          for model in ("avg", "lstmavg")}
VALUES.update({f"encoders_vs_wieting.quality.{cpu}.{side}": functools.partial(
    _encoder_quality, cpu, side) for cpu in ENCODER_CPUS
               for side in ("ours", "wieting")})


def _round_spread(cpu: str, model: str, side: str) -> str:
  """How far, in per cent of the slower, `side`'s rate moved between the
  rounds of the taking-turns run on `cpu`."""
  rates = next(r for r in _taking_turns(cpu)["results"]
               if r["model"] == model)[side]["pairs_per_s_by_round"]
  return f"{100 * (max(rates) / min(rates) - 1):.0f}"


def _mining_intel_over_amd(method: str, n: int, intel: str = "") -> str:
  """How many times its AMD EPYC time `method` took on the Intel Xeon
  (file variant `intel`) to mine N x N exactly at d = 256 on one device."""
  xeon = _by(f"mining_throughput.d256{intel}.intel-xeon-2core.json")
  amd = _by("mining_throughput.d256.amd-epyc-2core.json")
  return f"{xeon[(method, n, 1)] / amd[(method, n, 1)]:.1f}"


VALUES.update({f"encoders_vs_wieting.round_spread.{cpu}.avg.{side}":
               functools.partial(_round_spread, cpu, "avg", side)
               for cpu in ENCODER_CPUS for side in ("ours", "wieting")})
VALUES.update({f"mining_throughput.intel{variant}_over_amd.{method}.{n}":
               functools.partial(_mining_intel_over_amd, method, n, variant)
               for method in ("faiss", "ours") for n in (50000, 100000)
               for variant in INTEL_RERUNS})


def _tile_step_over_product(host: str, rerun: str = "") -> str:
  """How many times its bare product one tile's step with our kernel
  (AVX-512 build) took on `host`'s file of `rerun`."""
  ms = _load(f"mining_tile_profile.d256{rerun}.{host}.json")["runs"][0]["ms"]
  return f"{ms['step_kernel']['wall_ms'] / ms['product']['wall_ms']:.2f}"


VALUES.update({f"mining_tile_profile.step_over_product.{host}{rerun}":
               functools.partial(_tile_step_over_product, host, rerun)
               for host in markdown_table.CPU_KINDS for rerun in INTEL_RERUNS
               if os.path.exists(os.path.join(
                   BENCH, f"mining_tile_profile.d256{rerun}.{host}.json"))})


def _device_merge_speedup(n: int) -> str:
  """The H200's mining of N x N at d = 512 with the host's merge of the
  column top-k over the time with the merge on the device."""
  host, device = (_by(f"mining_throughput.d512{variant}.nvidia-h200.json")[
      ("ours", n, 1)] for variant in ("", ".device-merge"))
  return f"{host / device:.2f}"


VALUES.update({f"mining_throughput.device_merge_speedup.{n}":
               functools.partial(_device_merge_speedup, n)
               for n in (100000, 200000)})
def _their_time_over_ours(d: dict) -> str:
  """How many times paraflax's mining time sentence-transformers' took, on
  dev and on test, in run `d` of mining_vs_sentence_transformers.py."""
  return markdown_table.span(d["their_time_over_ours"].values(), 1)


VALUES.update({
    f"mining_vs_sentence_transformers.their_time_over_ours.{host}{rerun}":
    lambda name=f"mining_vs_sentence_transformers{rerun}.{host}-2core.json": (
        _their_time_over_ours(_load(name)))
    for host, rerun in (("amd-epyc", ""), ("intel-xeon", ""),
                        ("intel-xeon", INTEL_RERUNS[1]))})


def _one_core_amd_over_intel(side: str) -> str:
  """How many times its rate on one idle Intel Xeon core `side` ("ours",
  "opennmt") trains at on one AMD EPYC core, the whole loop timed."""
  amd, intel = (_load(f"nmt_vs_opennmt.{name}.json")["train"][side][
      "target_tokens_per_s"] for name in (
          "encoder-128-1core.amd-epyc-2core",
          "encoder-128-1core-idle.intel-xeon-2core"))
  return f"{amd / intel:.1f}"


VALUES.update({f"nmt_vs_opennmt.one_core_amd_over_intel.{side}":
               functools.partial(_one_core_amd_over_intel, side)
               for side in ("ours", "opennmt")})


# nmt_vs_opennmt.py's variants in table order, each with our encoder's
# width as the table shows it.
NMT_VARIANTS = {"encoder-128-1core": "2 x 128 (its `brnn`)",
                "encoder-128-1core-repeat": "2 x 128 (its `brnn`), repeated",
                "encoder-128-1core-idle": "2 x 128 (its `brnn`), 300 steps",
                "encoder-128-1core-all-pieces": "2 x 128 (its `brnn`)",
                "encoder-128-1core-all-pieces-emerald-rapids":
                    "2 x 128 (its `brnn`)",
                "encoder-128-1core-all-pieces-repeat-emerald-rapids":
                    "2 x 128 (its `brnn`), repeated",
                "encoder-128-2core": "2 x 128 (its `brnn`)",
                "encoder-128-2core-all-pieces": "2 x 128 (its `brnn`)",
                "encoder-128-2core-all-pieces-emerald-rapids":
                    "2 x 128 (its `brnn`)",
                "encoder-128-2core-all-pieces-repeat-emerald-rapids":
                    "2 x 128 (its `brnn`), repeated"}


def onmt_vocabulary(d: dict) -> str:
  """OpenNMT-py's vocabularies in a nmt_vs_opennmt.py result (training
  beside ours, or --onmt-model's kept training): every piece
  of the sentencepiece models, as ours, or (files without the key) the
  pieces its training text holds."""
  return _vocabulary_cell(d.get("onmt_vocabulary"))


def _vocabulary_cell(found: dict | None) -> str:
  """The words for an OpenNMT-py vocabulary record, {"which", "pieces"}:
  None where the file predates the record (the pieces its text holds)."""
  if found is None or found["which"] == "seen":
    return "the pieces its training text holds"
  return (f"all pieces, as ours ({found['pieces']['tgt']:,} target "
          "pieces and its 4 special tokens)")


def nmt_train_results() -> list[tuple[str, dict]]:
  """(variant, result) of each training side by side of nmt_vs_opennmt.py,
  `nmt_vs_opennmt.<variant>.<hardware>.json` for the variants of
  NMT_VARIANTS, by hardware, then variant."""
  found = []
  for path in glob.glob(os.path.join(BENCH, "nmt_vs_opennmt.encoder-*.json")):
    variant, hardware = os.path.basename(path)[
        len("nmt_vs_opennmt."):-len(".json")].rsplit(".", 1)
    if variant in NMT_VARIANTS:
      found.append((hardware, list(NMT_VARIANTS).index(variant), variant,
                     _load(os.path.basename(path))))
  return [(variant, d) for *_, variant, d in sorted(
      found, key=lambda f: f[:2])]


def _mining_ratios(hardware: str, with_compile: bool,
                   variant: str = "") -> list[float]:
  """faiss's time over ours, exact mining at d = 256 and 512 (the dims
  measured on `hardware`, files of `variant`); with our first call's
  compile added or not."""
  out = []
  for dim in (256, 512):
    name = f"mining_throughput.d{dim}{variant}.{hardware}.json"
    if not os.path.exists(os.path.join(BENCH, name)):
      continue
    ok = [r for r in _load(name)["results"] if r.get("status") == "ok"]
    faiss = {r["n"]: r["total_s"] for r in ok
             if r["method"] == "faiss" and r["devices"] == 1}
    out += [faiss[r["n"]] / (r["total_s"] + (
        r.get("compile_s") or 0.0 if with_compile else 0.0))
            for r in ok if r["method"] == "ours" and r["devices"] == 1
            and r["n"] in faiss]
  return out


def _exact_mining_row(hardware: str, variant: str = "") -> tuple:
  """The exact-mining speed-ups of `hardware`'s files of `variant`, its
  CPU as the files record it."""
  def name(dim: int) -> str:
    return f"mining_throughput.d{dim}{variant}.{hardware}.json"
  dims = [d for d in (256, 512)
          if os.path.exists(os.path.join(BENCH, name(d)))]
  return ("exact margin mining, 50k-100k, d = "
          + " and ".join(map(str, dims)),
          "faiss `IndexFlatIP` both ways + numpy",
          markdown_table.recorded_cpu_cell(_load(name(dims[0]))["hardware"]),
          markdown_table.span(_mining_ratios(hardware, False, variant))
          + " faster, compile left out; "
          + markdown_table.span(_mining_ratios(hardware, True, variant))
          + " with our first call's compile", "`mining_throughput.py`")


def _same_gpu_mining_row() -> tuple:
  """mining_same_gpu's speed-ups as one row of the peers' table: warm
  calls, and each side's first call (ours compiling, theirs starting CUDA
  and cuBLAS) as a one-off run pays it."""
  d, ok, sizes = _same_gpu()
  ours = [ok[("ours", n)] for n in sizes]
  theirs = [ok[("sentence_transformers", n)] for n in sizes]
  warm = [t["total_s"] / o["total_s"] for o, t in zip(ours, theirs)]
  first = [t["warmup_s"] / (o["total_s"] + o["compile_s"])
           for o, t in zip(ours, theirs)]
  peers = d["run"]["peers"]
  return (f"exact margin mining, {sizes[0] // 1000}k-{sizes[-1] // 1000}k, "
          f"d = {d['dim']}",
          f"sentence-transformers {peers['sentence-transformers']} "
          f"`semantic_search` (torch {peers['torch']}) on the same GPU",
          "NVIDIA H200",
          markdown_table.slower(" / ".join(f"{r:.2f}x" for r in warm), warm)
          + " faster, first calls left out; "
          + markdown_table.slower(" / ".join(f"{r:.2f}x" for r in first),
                                  first)
          + " with each side's first call (ours compiling "
          + "-".join(f"{o['compile_s']:.0f}" for o in ours) + " s)",
          "`mining_throughput.py` (`gpu/scale.sh`)")


def _sentence_transformers_row(d: dict) -> tuple[str, ...]:
  """A run of mining_vs_sentence_transformers.py as a row of the peers'."""
  ours, theirs = d["rows"]["paraflax"], d["rows"]["sentence-transformers"]
  peers = d["run"]["peers"]
  return ("exact margin mining from the same embeddings, 5,000 a side, "
          f"d = {d['embeddings'].split(', ')[1].split()[0]}",
          f"sentence-transformers {peers['sentence-transformers']}"
          " `semantic_search` and its mining example's margin and selection"
          f" (torch {peers['torch']})",
          markdown_table.recorded_cpu_cell(d["hardware"]),
          f"{_their_time_over_ours(d)} faster, first call left out (ours "
          f"compiling {ours['dev_run']['first_s']:.2f} s); the same pairs, "
          f"test F1 {ours['test_f1']:.1f} against {theirs['test_f1']:.1f}",
          "`mining_vs_sentence_transformers.py`")


def performance() -> list[str]:
  """lab/performance.md: ours against each peer, one row per benchmark."""
  # The training ratios by CPU, cores and OpenNMT-py's vocabularies.
  onmt: dict[tuple[str, bool], list[float]] = {}
  for _, d in nmt_train_results():
    onmt.setdefault((markdown_table.recorded_cpu_cell(
        d["hardware"], cores_used(d)), "onmt_vocabulary" in d), []).append(
            d["train"]["target_tokens_per_s_ratio_ours_over_opennmt"])
  dec = {cpu: {b["beam"]: b["sentences_per_s_ratio_ours_over_opennmt"][
      "exact"] for b in d["decode"]} for cpu, d in trained_decodes()}
  wall: dict[str, list[dict]] = {}
  for _, d in equal_wall_runs():
    wall.setdefault(markdown_table.recorded_cpu_cell(d["hardware"]),
                    []).append(d)
  enc = [(hardware, how, {r["model"]: r["ours_over_wieting"]
                           for r in d["results"]})
         for hardware, how, d in encoder_speed_results()]
  quality = per_cpu("encoders_vs_wieting", (".quality",))
  rows = [
      _exact_mining_row("amd-epyc-2core"),
      *(_exact_mining_row("intel-xeon-2core", variant)
        for variant in INTEL_RERUNS
        if _mining_ratios("intel-xeon-2core", False, variant)),
      _same_gpu_mining_row(),
      *map(_sentence_transformers_row,
           per_cpu("mining_vs_sentence_transformers")),
      *mining_peer_tables.performance_rows(),
      *(("NMT training, target tokens/s", "OpenNMT-py 3.0.4",
         cpu, markdown_table.slower(markdown_table.span(r), r)
         + ", whole loop to whole loop" + (
             ", the same vocabularies" if same else
             ", OpenNMT-py on the pieces its training text holds"),
         "`nmt_vs_opennmt.py`")
        for (cpu, same), r in onmt.items()),
      *(("beam search of trained models, sentences/s, exact stop",
         "OpenNMT-py 3.0.4", cpu,
         markdown_table.slower(f"{r[5]:.2f}x (beam 5), {r[50]:.2f}x "
                               "(beam 50)", r.values()),
         "`nmt_vs_opennmt.py`") for cpu, r in dec.items()),
      *(("newstest2013 BLEU after 30 minutes of training",
         "OpenNMT-py 3.0.4", hardware,
         ", ".join(f"{w['ours']['newstest2013']['bleu']:.2f} against "
                   f"{w['opennmt']['newstest2013']['bleu']:.2f}"
                   + ("" if "onmt_vocabulary" in w else "*")
                   for w in runs) + (
                       "; * OpenNMT-py on the pieces its training text "
                       "holds" if any("onmt_vocabulary" not in w
                                      for w in runs) else ""),
         "`nmt_equal_wall.py`")
        for hardware, runs in wall.items()),
      *(("newstest2013 BLEU after 1,500 steps", "OpenNMT-py 3.0.4",
         hardware, f"{_input_feeding(d)['dev_all']['bleu']:.2f} against "
         f"{d['opennmt']['dev_all']['bleu']:.2f}" + (
             "" if "vocabulary" in d["opennmt"] else
             ", OpenNMT-py on the pieces its training text holds"),
         "`nmt_learning_vs_opennmt.py`") for hardware, d in learning_results()),
      *((f"Avg / LSTM-avg training, pairs/s ({how})",
         "Wieting's PyTorch code", hardware,
         f"{ratio['avg']:.1f}x / {ratio['lstmavg']:.1f}x",
         "`encoders_vs_wieting.py`") for hardware, how, ratio in enc),
      *((f"the same Avg after {q['results'][0]['updates']} updates, "
         "STSb test", "Wieting's PyTorch code",
         markdown_table.recorded_cpu_cell(q["hardware"]),
         f"{q['results'][0]['ours']['figures']['STSb test']:.1f} against "
         f"{q['results'][0]['wieting']['figures']['STSb test']:.1f}",
         "`encoders_vs_wieting.py --quality`") for q in quality),
  ]
  return _table(["what", "peer", "hardware", "ours / peer", "benchmark"],
                rows, numeric_from=5)


def _minutes(seconds: float) -> str:
  m, s = divmod(round(seconds), 60)
  return f"{m} min {s} s" if m else f"{s} s"


def _head(command: str) -> str:
  """A command's words up to its first option (`-m` kept)."""
  words = []
  for word in command.split():
    if word.startswith("-") and word != "-m":
      break
    words.append(word)
  return " ".join(words)


def _newcomer(job: str) -> list[str]:
  """newcomer.py JOB: one of the README's commands from a fresh clone with
  cold caches, step by step, on each machine it ran on."""
  rows = []
  for d in per_cpu(f"newcomer.{job}"):
    where = markdown_table.recorded_cpu_cell(d["hardware"])
    for step in d["steps"]:
      rows.append((f"`{_head(step['step'])}`", where,
                   _minutes(step["wall_s"]), _minutes(step["cpu_s"]),
                   *_step_load(step)))
    rows.append(("the whole command" + ("" if d["ok"] else ": failed"),
                 where, _minutes(d["wall_s"]),
                 _minutes(sum(s["cpu_s"] for s in d["steps"])), "", ""))
  return _table(["step (fresh clone, cold caches)", "hardware", "wall",
                 "CPU", "load at its start", "load during (mean / max)"],
                rows, numeric_from=2)


def _step_load(step: dict) -> tuple[str, str]:
  """A step's 1-minute load at its start and during it."""
  return (f"{step['load_at_start']:.1f}",
          f"{step['load_mean']:.1f} / {step['load_max']:.1f}")


def newcomer_main() -> list[str]:
  """The README's main command (install, KenLM, the tiny pipeline)."""
  return _newcomer("main")


def newcomer_tests() -> list[str]:
  """The README's test command (install with the test extra, KenLM, pytest)."""
  return _newcomer("tests")


def pod_shards() -> list[str]:
  """pod_shards.py: per run of data.parts over P processes, what each
  process read and encoded, its peak RSS and the run's losses."""
  d = _load("pod_shards.intel-xeon-2core.json")
  return _table(
      ["data.parts", "processes", "pairs each process reads and encodes",
       "peak RSS of each process (MiB)", "losses at steps 1, 2"],
      [(r["parts"], r["processes"],
        " / ".join(f"{p['pairs_read']:,}" for p in r["per_process"]),
        " / ".join(f"{p['peak_rss_mib']:,}" for p in r["per_process"]),
        ", ".join(f"{loss:.6f}" for loss in r["losses"]))
       for r in d["runs"]])


def width_compiles() -> list[str]:
  """width_compiles.py: the same NMT run at each data.width_multiple, its
  compiles, wall time, last loss and dev BLEU."""
  d = _load("width_compiles.intel-xeon-2core.json")
  return _table(
      ["data.width_multiple", "train-step compiles", "beam-search compiles",
       "wall, compiles included (s)", f"loss at step {d['steps']:,}",
       "dev BLEU"],
      [(r["width_multiple"], r["compiles"]["step"],
        r["compiles"]["search_all"], _f(r["wall_s"], 1),
        f"{r['last_loss']:.7f}", _f(r["dev_bleu"], 4)) for r in d["runs"]],
      numeric_from=1)


def _width_loss_gap() -> str:
  """The largest gap between the runs' losses at a logged step."""
  runs = _load("width_compiles.intel-xeon-2core.json")["runs"]
  gap = max(abs(a[1] - b[1]) for run in runs[1:]
            for a, b in zip(runs[0]["losses"], run["losses"], strict=True))
  return f"{gap:.1e}"


VALUES["width_compiles.loss_gap"] = _width_loss_gap


TABLES = (newcomer_main, newcomer_tests, performance, encoders_quality,
          nmt_decoding, nmt_learning, nmt_decoder_changes, nmt_equal_wall,
          nmt_decode_phases, nmt_step_profile, mining_kernel_or_ops, mining_tile_profile,
          mining_devices_product, mining_index_build, bilingual_throughput,
          scoring_throughput, domain_throughput, pivot_throughput,
          compile_cache, monods_weights,
          mining_same_gpu, pod_shards, width_compiles)
