"""lab/benchmarks/gpu/scale_record.py: the record a lent machine's scale.sh
run keeps beside its results, its command, commit and machine at the start
and the whole script's span at the end."""
import importlib.util
import json
import os

from tests.conftest import ROOT


def _module():
  spec = importlib.util.spec_from_file_location(
      "scale_record", ROOT / "lab" / "benchmarks" / "gpu" / "scale_record.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def test_a_scale_run_records_its_settings_machine_and_span(tmp_path):
  record = _module()
  path = str(tmp_path / "run.json")
  record.main(["start", path, "PHASES=util mining", "COMPILE_S=100"])
  head = json.loads(open(path, encoding="utf-8").read())
  assert head["command"] == ("env 'PHASES=util mining' COMPILE_S=100 "
                             "bash lab/benchmarks/gpu/scale.sh OUT")
  assert head["commit"] and head["hardware"]["cores"] == os.cpu_count()
  record.main(["end", path, str(os.getpid())])
  run = json.loads(open(path, encoding="utf-8").read())["run"]
  assert run["wall_s"] >= 0 and run["cpu_s"] > 0
  assert "started" not in json.loads(open(path, encoding="utf-8").read())


def test_a_scale_run_without_settings_is_the_bare_script():
  assert _module().command([]) == "bash lab/benchmarks/gpu/scale.sh OUT"
