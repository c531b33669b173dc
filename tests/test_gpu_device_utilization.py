"""lab/benchmarks/gpu/device_utilization.py, the script a lent GPU runs to
measure the train loop's device utilisation and the beam search: it runs
on CPU devices too, and writes every figure it promises."""
import importlib.util
import json

from tests.conftest import ROOT


def test_the_device_utilization_script_runs_on_cpu(tmp_path):
  spec = importlib.util.spec_from_file_location(
      "device_utilization",
      ROOT / "lab" / "benchmarks" / "gpu" / "device_utilization.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  module.main([str(tmp_path), "--tiny", "--steps", "4", "--log-every", "2",
               "--profile", "1", "--sentences", "16", "--beam-batch", "8"])
  result = json.loads((tmp_path / "device_utilization.json").read_text())
  for kind in ("sync", "prefetch"):
    row = result["loops"][kind]
    assert row["steps"] == 4 and row["steps_per_s"] > 0
    assert row["target_tokens_per_s"] > 0
    assert list((tmp_path / f"profile_{kind}").rglob("*.xplane.pb"))
  assert result["beam_search"]["sentences"] == 16
  assert result["prefetch_over_sync"] > 0
