"""What a collected run's commands read that they do not make themselves,
and the commands that make it: a rerun in a fresh clone runs these first.
A benchmark that reads a paraflax run's output (a trained workdir, a
paraphrase table) names what makes it the same way (BENCHMARK_NEEDS):
`lab/run.py NAME` runs those from the repository root before it.

    NEEDS["sts_encoders/gran-seed1"] == ("sts_encoders/ppdb-words",)

An entry is a kept run ("TABLE/RUN", whose own needs and commands run
before it, each once) or a command that is no kept run's (the noisy
Multi30k corpus, a folder a command `cd`s into). `unmade_reads` finds the
runs/ folders a command reads before any of its steps makes them;
collect_result.py refuses a command with such a read that NEEDS does not
cover, and tests/test_lab.py checks every kept run against it. Reads a
config makes by itself (configs/gran.py's PPDB words) are not visible
there and are listed all the same.
"""
from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable

# The environment variable in which lab/run.py hands a benchmark the
# records of its needs (command, seconds, kept values repeated), which
# children.write_result keeps in the result file's `run.needs`.
RECORD_VARIABLE = "PARAFLAX_LAB_NEEDS"

# The noisy corpus of lab/fidelity.md's caption encoders (Multi30k de-en,
# Khayrallah & Koehn noise on 10 % of the lines per kind).
_NOISY_M30K = ("paraflax noise-bitext --corpus bitext_multi30k_de_en "
               "--output m30k_noisy.tsv")
_BT_ANALYSIS = "mkdir -p runs/bt_analysis"
# lab/fidelity.md's NMT posterior and stage_scale.py's beam: the tiny
# pipeline's NMT, without the stages after it.
_TINY_NMT = ("paraflax pipeline --config configs/pipeline.py:tiny "
             "--workdir runs/tiny --until nmt")
# scoring_throughput.py's records and ref_prob classifier: the tiny
# pipeline's back-translation (3,000 Multi30k sentences, 4-best) and an Avg
# classifier trained on it.
_TINY_BT = ("paraflax pipeline --config configs/pipeline.py:tiny "
            "--workdir runs/tiny --until backtranslate")
_TINY_REFCLF = ("paraflax train --config configs/ref_classifier.py:avg "
                "--workdir runs/refclf_tiny "
                "--config.data.input=runs/tiny/backtranslate/bt.jsonl")
# The hosts of the NMT side-by-side files, as their names end: the second
# Intel Xeon generation's files sit beside the first's under a variant of
# their own (lab/benchmarks/README.md, hardware names).
_NMT_HOSTS = (".intel-xeon-2core", ".amd-epyc-2core",
              "-emerald-rapids.intel-xeon-2core")
_MLPS = ("band20", "band40", "band60", "band80", "band100", "random",
         "shuffled", "worst60")

# The configs/nmt.py:de variants nmt_learning_vs_opennmt.py compares, each
# 1,500 steps with its dev evaluation every 500; the two with input feeding
# also translate all of newstest2013. tests/test_lab.py checks each
# variant's config against the model and loss the result file records.
NMT_VARIANTS: dict[str, tuple[str, ...]] = {
    "nmt_base": ("--config.model.input_feeding=false",),
    "nmt_feed": (),
    "nmt_bridge": ("--config.model.input_feeding=false",
                   "--config.model.bridge=final"),
    "nmt_norm": ("--config.model.input_feeding=false",
                 "--config.loss.normalize=sentences"),
    "nmt_onmt": ("--config.model.bridge=final",
                 "--config.loss.normalize=sentences"),
}


def _nmt_variant(workdir: str) -> str:
  """The command that trains (and, with input feeding, tests) runs/WORKDIR."""
  line = " ".join(("paraflax train --config configs/nmt.py:de --workdir",
                   f"runs/{workdir} --config.train_steps=1500",
                   "--config.eval_every=500", *NMT_VARIANTS[workdir]))
  if "--config.model.input_feeding=false" in NMT_VARIANTS[workdir]:
    return line
  return f"{line} && paraflax eval --workdir runs/{workdir} --only dev_all"


NEEDS: dict[str, tuple[str, ...]] = {
    "sts_encoders/gran-seed1": ("sts_encoders/ppdb-words",),
    "config_runs/nmt-fr-nolimit": ("config_runs/nmt-fr",),
    "mining/reconstruction-de": ("config_runs/bilingual-recon",),
    **{f"bt_analysis/{run}": (_BT_ANALYSIS, "headline/nmt-de")
       for run in ("multi30k-stats", "wmt-analysis")},
    **{f"config_runs/refclf-{run}": ("headline/nmt-de",)
       for run in ("avg-hardest", "avg-random", "lstm-hardest",
                   "lstm-random")},
    "config_runs/refclf-avg-random-nmt1500": (_BT_ANALYSIS,),
    **{f"paper_grids/{run}": ("pipeline_tiny/tiny",)
       for run in ("bleu-avg", "lm_ppl-avg", "overlap_1-avg")},
    **{f"eval_filtering/{run}": ("config_runs/bilingual-captions",
                                 _NOISY_M30K)
       for run in ("captions", "captions-s1")},
    **{f"eval_filtering/captions-mlp-{mlp}": (
        "config_runs/bilingual-captions", _NOISY_M30K) for mlp in _MLPS},
    **{f"eval_filtering/captions-mlp-{mlp}-s1": (
        f"eval_filtering/captions-mlp-{mlp}",) for mlp in _MLPS},
}

# A benchmark's result file -> what its command reads from runs/.
BENCHMARK_NEEDS: dict[str, tuple[str, ...]] = {
    **{f"bilingual_throughput.{v}intel-xeon-2core.json": (
        "config_runs/bilingual-de",) for v in ("", "csls.")},
    "batch_padding.nmt-de.json": ("headline/nmt-de",),
    "domain_throughput.intel-xeon-2core.json": (
        "paraflax domain-data --output runs/domain",),
    **{f"scoring_throughput.{v}intel-xeon-2core.json": (_TINY_BT, _TINY_REFCLF)
       for v in ("", "beam-direct-runner.")},
    "mlp_negatives.multi30k.intel-xeon-2core.json": (
        "config_runs/bilingual-captions", _NOISY_M30K, _TINY_NMT),
    **{f"mlp_negatives.multi30k.{v}.intel-xeon-2core.json": (
        "config_runs/bilingual-captions", _NOISY_M30K)
       for v in ("apart", "seed1")},
    "monods_weights.general-256.intel-xeon-2core.json": (
        "domain/monods-general",),
    **{f"nmt_vs_opennmt.{v}.json": ("headline/nmt-de",) for v in (
        "encoder-128-1core-idle.intel-xeon-2core",
        "encoder-128-1core.intel-xeon-2core",
        "encoder-128-1core-repeat.intel-xeon-2core",
        "encoder-128-1core.amd-epyc-2core",
        "encoder-128-2core.amd-epyc-2core",
        "encoder-128-2core.intel-xeon-2core",
        *(f"encoder-128-{c}core-all-pieces{h}" for c in (1, 2)
          for h in (*_NMT_HOSTS, "-repeat-emerald-rapids.intel-xeon-2core")))},
    **{f"nmt_step_profile.encoder-128-{c}core{h}.json": (
        "headline/nmt-de",) for c in (1, 2) for h in _NMT_HOSTS},
    "pivot_throughput.table.intel-xeon-2core.json": ("domain/pivot-top",),
    **{f"stage_scale.{v}amd-epyc-2core.json": (_TINY_NMT,)
       for v in ("", "backtranslate-b256.", "filtered-1e7.")},
    # Its --workdir lends the sentencepiece models both sides cut with:
    # runs/nmt_feed, which the trained decode below reads too.
    **{f"nmt_equal_wall.{v}{host}.json": (_nmt_variant("nmt_feed"),)
       for v in ("", "cores-swapped.")
       for host in ("intel-xeon-2core", "amd-epyc-2core")},
    "nmt_decode_phases.intel-xeon-2core.json": (_nmt_variant("nmt_feed"),),
    # Both sides trained 1,500 steps on the same subwords: OpenNMT-py's
    # checkpoints stay in runs/onmt_feed for --onmt-model, and a later
    # call reuses that finished training.
    **{f"nmt_vs_opennmt.trained.{host}.json": (
        _nmt_variant("nmt_feed"),
        "python lab/benchmarks/nmt_learning_vs_opennmt.py --onmt-bin "
        "$ONMT_BIN --workdirs runs/nmt_feed --keep runs/onmt_feed "
        "--output runs/onmt_feed/learning.json")
       for host in ("intel-xeon-2core", "amd-epyc-2core")},
    **{f"nmt_learning_vs_opennmt.{host}.json": tuple(
        _nmt_variant(w) for w in NMT_VARIANTS)
       for host in ("intel-xeon-2core", "amd-epyc-2core")},
}
_RUN = re.compile(r"[a-z0-9_.-]+/[a-z0-9_.-]+")
_TOP = re.compile(r"(?:\.\./)*(runs/[^/\s]+)")
# Commands whose --workdir is the folder they make (the others read it).
_MAKERS = {("paraflax", "train"), ("paraflax", "pipeline"),
           ("paraflax", "sweep")}
# Commands that only read their --workdir (each writes its --output); the
# other commands write results there (eval its evals.json).
_READERS = {("paraflax", c) for c in (
    "translate", "backtranslate", "embed", "mine", "score-pairs",
    "align-eval", "eval-reconstruction", "eval-filtering")}


def is_run(need: str) -> bool:
  return bool(_RUN.fullmatch(need))


def ref(name: str) -> str:
  """The name NEEDS gives collected run "runs/TABLE/RUN.json": "TABLE/RUN";
  BENCHMARK_NEEDS names a benchmark's result file as it is."""
  if not name.startswith("runs/"):
    return name
  return name.removeprefix("runs/").removesuffix(".json")


def chain(ref: str, command_of: Callable[[str], str],
          needs: dict[str, tuple[str, ...]] | None = None
          ) -> list[tuple[str, str]]:
  """(need, command) for what run `ref` needs, in the order they run: a
  kept run after its own needs, each once. `command_of(run)` is a kept
  run's command; ValueError on a cycle."""
  needs = {**NEEDS, **BENCHMARK_NEEDS} if needs is None else needs
  done: dict[str, str] = {}

  def visit(run: str, path: tuple[str, ...]) -> None:
    for need in needs.get(run, ()):
      if need in path:
        raise ValueError(f"{' -> '.join((*path, need))}: a cycle of needs")
      if need in done:
        continue
      if is_run(need):
        visit(need, (*path, need))
        done[need] = command_of(need)
      else:
        done[need] = need

  visit(ref, (ref,))
  return list(done.items())


def _top(word: str) -> str | None:
  m = _TOP.match(word)
  return m.group(1) if m else None


def _tops(word: str) -> list[str]:
  """The runs/ folders a word names, "--config.scored=runs/tiny/s" too."""
  return [t for piece in re.split(r"[=:,]", word) if (t := _top(piece))]


def _made_at(argv: list[str]) -> set[int]:
  """The indices of `argv`'s words that name what the step makes: an
  --output or --json, the --workdir of train / pipeline / sweep, mkdir's
  and cp's destinations, and a lab script's runs/ arguments (what a script
  reads is its own affair)."""
  made = {i + 1 for i, w in enumerate(argv[:-1]) if w in ("--output", "--json")}
  if tuple(argv[:2]) in _MAKERS and "--workdir" in argv[:-1]:
    made.add(argv.index("--workdir") + 1)
  if argv[:2] == ["mkdir", "-p"]:
    made |= set(range(2, len(argv)))
  if argv[:1] == ["cp"]:
    made.add(len(argv) - 1)
  if any(w.endswith((".py", ".sh")) for w in argv[:2]):
    made |= {i for i, w in enumerate(argv) if _top(w)}
  return made


def _mentioned(command: str) -> set[str]:
  return {t for w in shlex.split(command.replace("&&", " "))
          for t in _tops(w)}


def unmade_reads(command: str, made: set[str] | None = None) -> list[str]:
  """The runs/ folders `command` (steps joined by &&, from the repository
  root) reads before one of its steps, or `made`, makes them; `cd` into
  one reads it. Steps run from another folder are not looked into."""
  made = set(made or ())
  reads: list[str] = []
  cwd = "."
  for step in command.split("&&"):
    argv = shlex.split(step)
    if argv[:1] == ["cd"]:
      target = os.path.normpath(os.path.join(cwd, argv[1]))
      if cwd == "." and (top := _top(target)) and top not in made:
        reads.append(top)
      cwd = target
      continue
    if cwd != ".":
      continue
    at = _made_at(argv)
    reads += [top for i, word in enumerate(argv) if i not in at
              for top in _tops(word) if top not in made]
    made |= {t for i in at if (t := _top(argv[i]))}
  return list(dict.fromkeys(reads))


def writes(command: str) -> list[tuple[str, str]]:
  """(path, step) for each path of the clone `command`'s steps write, in
  order, from the repository root: what a step makes (`_made_at`), the --workdir
  of a paraflax step that is no reader (eval writes its results there) and
  a folder `cd` goes into (what runs there is not looked into). What a lab
  script writes is its own affair."""
  out: list[tuple[str, str]] = []
  cwd = "."
  for step in command.split("&&"):
    argv = shlex.split(step)
    if argv[:1] == ["cd"]:
      target = os.path.normpath(os.path.join(cwd, argv[1]))
      paths = [target] if cwd == "." else []
      cwd = target
    elif cwd != "." or any(w.endswith((".py", ".sh")) for w in argv[:2]):
      continue
    else:
      at = _made_at(argv)
      if (argv[:1] == ["paraflax"] and tuple(argv[:2]) not in _READERS
          and "--workdir" in argv[:-1]):
        at.add(argv.index("--workdir") + 1)
      paths = [os.path.normpath(argv[i]) for i in sorted(at)]
    out += [(path, shlex.join(argv)) for path in paths if _inside(path)]
  return out


def _inside(path: str) -> bool:
  """Whether `path` (normalized) lies in the clone: not absolute, not
  above it, no variable."""
  return not path.startswith(("/", "../", "$")) and path != ".."


def overlap(a: str, b: str) -> bool:
  """Whether writing path `a` can change what is in path `b`."""
  return a == b or a.startswith(f"{b}/") or b.startswith(f"{a}/")


def settled(steps: list[str]) -> list[str]:
  """`steps` as they leave a folder: a paraflax step or a `mkdir -p`
  that ran before already changes nothing (paraflax keeps finished work),
  any other step counts each time."""
  out: list[str] = []
  for step in steps:
    if step in out and step.startswith(("paraflax ", "mkdir -p ")):
      continue
    out.append(step)
  return out


def _made_by_needs(ref: str, command_of: Callable[[str], str],
                   needs: dict[str, tuple[str, ...]] | None) -> set[str]:
  """Every runs/ folder the steps of what `ref` needs name."""
  return {t for _, step in chain(ref, command_of, needs)
          for t in _mentioned(step)}


def uncovered(ref: str, command: str, command_of: Callable[[str], str],
              needs: dict[str, tuple[str, ...]] | None = None) -> list[str]:
  """The runs/ folders run `ref`'s `command` reads that neither it nor
  what it needs makes (every folder a need names is there after it)."""
  return unmade_reads(command, _made_by_needs(ref, command_of, needs))


def benchmark_uncovered(name: str, command: str,
                        command_of: Callable[[str], str],
                        needs: dict[str, tuple[str, ...]] | None = None
                        ) -> list[str]:
  """The runs/ folders benchmark `name`'s `command` names that what it
  needs does not make: a benchmark writes lab/results/, so every runs/
  folder it names is one it reads."""
  return sorted(_mentioned(command) - _made_by_needs(name, command_of,
                                                     needs))
