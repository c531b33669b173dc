"""`paraflax compile`: programs compiled for TPU topologies on this CPU
host (libtpu's compile-only client), their memory, FLOPs and collectives,
and the refusals."""
import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest

from paraflax import config as config_lib
from paraflax import errors
from paraflax.aot import compile as compile_lib
from paraflax.aot import flops
from paraflax.aot import hlo
from paraflax.aot import topology
from tests.conftest import ROOT

# Each recipe at a size that compiles in seconds: (config, overrides).
TINY = {
    "nmt": ("nmt.py:de", ("--config.vocab.size=600",
                          "--config.model.emb_dim=24",
                          "--config.model.hidden=24",
                          "--config.model.attention_dim=24",
                          "--config.batch_size=32",
                          "--config.data.max_len=16")),
    "bilingual": ("bilingual.py:de", ("--config.vocab.size=600",
                                      "--config.model.word_dim=24",
                                      "--config.model.hidden=24",
                                      "--config.data.max_len=16",
                                      "--config.batch_size=16")),
    "gran": ("gran.py", ("--config.model.word_dim=32",
                         "--config.model.hidden=32",
                         "--config.batch_size=16", "--config.megabatch=4",
                         "--config.data.max_len=16",
                         "--config.length_groups=1",
                         "--config.data.vocab_max_size=2000")),
    "ref_classifier": ("ref_classifier.py:avg", (
        "--config.batch_size=16", "--config.data.vocab_max_size=2000")),
    "ref_classifier_lstm": ("ref_classifier.py:lstm", (
        "--config.batch_size=16", "--config.data.vocab_max_size=2000",
        "--config.model.word_dim=32", "--config.model.hidden=32",
        "--config.data.max_len=16")),
    "mlp_similarity": ("mlp_similarity.py", ("--config.batch_size=16",
                                             "--config.hidden=64")),
}
TOPOLOGIES = ("v5e:2x2", "v4:2x2x1")


def _config(name: str, *extra: str):
  path, overrides = TINY[name]
  return config_lib.load(str(ROOT / "configs" / path), [*overrides, *extra])


def _compile(name: str, topo: str = "v5e:2x2", *extra: str, **options):
  return compile_lib.compile_config(_config(name, *extra), topo,
                                    dim=64, **options)


@pytest.mark.parametrize("topo", TOPOLOGIES)
@pytest.mark.parametrize("recipe", sorted(TINY))
def test_every_recipe_train_step_compiles_for_tpu_topologies(recipe, topo):
  report = _compile(recipe, topo)
  chips = {"v5e:2x2": 4, "v4:2x2x1": 4}[topo]
  assert report["chips"] == chips and report["compile_only"]
  # v4's chips are two devices (TensorCores) each.
  assert report["devices"] == {"v5e:2x2": 4, "v4:2x2x1": 8}[topo]
  assert report["fits"] is True
  memory = report["memory_bytes_per_chip"]
  assert 0 < memory["total"] < report["hbm_bytes_per_chip"]
  assert report["flops_per_step"] > 0 and report["bytes_accessed_per_step"] > 0
  assert report["projected_step_seconds"] > 0
  assert report["bound"] in ("compute", "hbm", "interconnect")
  # Data parallelism: the gradients are summed over the chips each update.
  kinds = {c["kind"] for c in report["collectives"]}
  assert "all-reduce" in kinds, report["collectives"]


def test_data_parallel_step_all_reduces_the_parameter_bytes():
  report = _compile("nmt")
  largest = max(c["bytes"] for c in report["collectives"]
                if c["kind"] == "all-reduce")
  assert largest == pytest.approx(report["parameter_bytes"], rel=0.05)


def test_fsdp_rules_split_the_state_and_gather_the_parameters():
  report = _compile("nmt", "v5e:2x2",
                    "--config.partitioning.rules=((\".*\", \"fsdp\"),)")
  kinds = {c["kind"] for c in report["collectives"]}
  assert "all-gather" in kinds, report["collectives"]
  replicated = _compile("nmt")
  assert (report["memory_bytes_per_chip"]["arguments"]
          < replicated["memory_bytes_per_chip"]["arguments"])


@pytest.mark.parametrize("topo", TOPOLOGIES)
def test_fsdp_moves_what_fsdp_predicts_twice_the_parameters(topo):
  """One gather of the parameters and one sum of their gradients a step.
  Left to itself, the partitioner gathered the RNNs' weights (or
  activations in their place) and summed gradients inside the position
  loops: 3 to 4.5 times the parameter bytes in all-gathers alone, and
  all-to-alls."""
  report = _compile("nmt", topo,
                    "--config.partitioning.rules=((\".*\", \"fsdp\"),)")
  assert report["collective_bytes_per_step"] == pytest.approx(
      2 * report["parameter_bytes"], rel=0.01), report["collectives"]
  assert {c["kind"] for c in report["collectives"]} == {"all-gather",
                                                         "all-reduce"}


def test_flops_per_step_double_with_the_batch():
  one = _compile("nmt", "v5e:2x2", "--config.batch_size=32")
  two = _compile("nmt", "v5e:2x2", "--config.batch_size=64")
  assert two["flops_per_step"] / one["flops_per_step"] == pytest.approx(
      2.0, rel=0.1)


@pytest.mark.parametrize("topo", TOPOLOGIES)
def test_beam_search_and_knn_step_compile(topo):
  search = _compile("nmt", topo, program="backtranslate", batch_size=16,
                    beam=4)
  assert search["fits"] and search["while_trips"] > 1
  mine = compile_lib.compile_config(
      config_lib.load(str(ROOT / "configs" / "mine.py"), []), topo,
      program="mine", rows=20_000, dim=64)
  assert mine["fits"] and mine["flops_per_step"] > 0


def test_pq_codes_hold_the_mining_corpus_in_m_bytes_a_row():
  mine = config_lib.load(str(ROOT / "configs" / "mine.py"), [])
  exact, codes = (compile_lib.compile_config(
      mine, "v5e:2x2", program="mine", rows=20_000, dim=64, fp16=True,
      pq=pq) for pq in (0, 8))
  assert codes["fits"] and codes["flops_per_step"] > 0
  assert codes["parameter_bytes"] * 16 == exact["parameter_bytes"]
  with pytest.raises(errors.ConfigError, match="does not divide --dim"):
    compile_lib.compile_config(mine, "v5e:2x2", program="mine", rows=20_000,
                               dim=64, pq=6)


def test_each_width_the_run_pads_to_compiles_with_width_all():
  report = _compile("nmt", width="all")
  assert [p["width"] for p in report["programs"]] == [8, 16]
  assert report["widths_run"] == [8, 16]


def _cli(*args: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, "-m", "paraflax.cli", "compile",
                         *args], capture_output=True, text=True, cwd=ROOT,
                        check=False)


def test_a_config_that_does_not_fit_exits_2_with_its_memory(tmp_path):
  out = tmp_path / "big.json"
  run = _cli("--config", str(ROOT / "configs" / "nmt.py:de"),
             "--topology", "v5e:2x2", "--json", str(out),
             "--config.vocab.size=200000", "--config.model.emb_dim=4096",
             "--config.model.hidden=2048", "--config.batch_size=8",
             "--config.data.max_len=8")
  assert run.returncode == 2, run.stderr
  assert "Traceback" not in run.stderr
  assert "per chip, more than the chip's" in run.stderr
  assert "GiB of HBM" in run.stderr
  assert "fsdp" in run.stderr and "batch_size" in run.stderr
  report = json.loads(out.read_text())
  assert report["fits"] is False
  assert report["memory_bytes_per_chip"]["total"] > 16e9


def test_an_unknown_topology_exits_2_naming_the_known_forms():
  run = _cli("--config", str(ROOT / "configs" / "nmt.py:de"),
             "--topology", "v9:2x2")
  assert run.returncode == 2 and "Traceback" not in run.stderr
  assert "v5e:16x16" in run.stderr and "local" in run.stderr


def test_without_libtpu_the_message_names_the_install(monkeypatch):
  monkeypatch.setattr(topology.importlib.util, "find_spec", lambda _: None)
  with pytest.raises(errors.ConfigError, match=r"pip install -e '\.\[tpu\]'"):
    topology.target("v5e:2x2")


def test_a_topology_of_the_wrong_axes_is_refused():
  with pytest.raises(errors.ConfigError, match="3 axes"):
    topology.target("v4:2x2")


def test_matmul_flops_count_a_scan_as_many_times_as_it_runs():
  def f(w, x):
    return jax.lax.scan(lambda c, xi: (c + jnp.sum(xi @ w), None), 0.0, x)[0]
  full, once = flops.matmul_flops(
      f, jax.ShapeDtypeStruct((16, 8), jnp.float32),
      jax.ShapeDtypeStruct((10, 4, 16), jnp.float32))
  assert (full, once) == (10 * 2 * 4 * 8 * 16, 2 * 4 * 8 * 16)


HLO = """\
%body (p: (s32[], f32[8])) -> (s32[], f32[8]) {
  %p = (s32[], f32[8]) parameter(0)
  %ar = f32[256,4]{1,0} all-reduce(%x), replica_groups={}, to_apply=%add
  %ag = bf16[8,16]{1,0} all-gather-start(%y), dimensions={0}
  %agd = bf16[8,16]{1,0} all-gather-done(%ag)
}

%cond (p: (s32[], f32[8])) -> pred[] {
  %c = s32[] constant(12)
  ROOT %lt = pred[] compare(%i, %c), direction=LT
}

ENTRY %main (a: f32[8]) -> f32[8] {
  %w = (s32[], f32[8]) while(%t), condition=%cond, body=%body
  %rs = f32[64]{0} reduce-scatter(%z), dimensions={0}, to_apply=%add
}
"""


def test_hlo_collectives_count_loop_bodies_by_their_trip_count():
  found = {(c.kind, c.bytes): c.count for c in hlo.collectives(HLO)}
  assert found == {("all-reduce", 256 * 4 * 4): 12,
                   ("all-gather", 8 * 16 * 2): 12,
                   ("reduce-scatter", 64 * 4): 1}


POD_RESULT = ROOT / "lab" / "results" / "compile_pipeline_pod.json"


def test_the_pipelines_pod_preset_is_its_compiled_projection(tmp_path):
  """configs/pipeline.py:pod's batch sizes and seconds_per_unit are those
  lab/benchmarks/compile_pipeline_pod.py compiled: a changed preset, or a
  rerun that disagrees, fails here."""
  from paraflax.pipeline import planning  # pylint: disable=g-import-not-at-top
  rows = {r["stage"]: r for r in json.loads(
      POD_RESULT.read_text(encoding="utf-8"))["rows"]}
  assert set(rows) == {"nmt", "words", "gran", "bilingual", "backtranslate"}
  pod = config_lib.load_file(str(ROOT / "configs" / "pipeline.py") + ":pod")
  configs = planning.plan(pod, str(tmp_path / "w")).configs
  for stage, row in rows.items():
    batch = (pod.backtranslate.batch_size if stage == "backtranslate"
             else configs[stage].batch_size)
    assert batch == row["batch_size"], stage
    # Fills the chips (8 rows a chip or more, split evenly; the words'
    # batch of 100 pads to 104) and fits.
    rows_an_update = row["batch_rows"] // (
        1 if stage == "backtranslate" else row["units_per_step"])
    assert row["fits"] and rows_an_update % row["chips"] == 0, stage
    assert rows_an_update >= max(batch, 8 * row["chips"]), stage
    assert pod.seconds_per_unit[stage] == pytest.approx(
        row["seconds_per_unit"], rel=0.01), stage
