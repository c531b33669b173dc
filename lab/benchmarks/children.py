"""What every benchmark needs to measure in child processes: one fresh
interpreter per simulated device count (the count is fixed when jax starts),
its environment, its JSON result and its peak memory.

A child prints its result as the last line of stdout that starts with "{";
its stderr (logs, warnings) goes to the terminal.
"""
from __future__ import annotations

import glob
import gzip
import json
import os
import platform
import re
import resource
import shlex
import subprocess
import sys
import time
from typing import Any

from paraflax import quiet

COUNT_FLAG = "--xla_force_host_platform_device_count"

# The environment the benchmark was started in, for commands that must run
# as a user runs them (newcomer.py), before quieting changes it.
USER_ENV = dict(os.environ)
# A benchmark imports jax itself, not through the CLI that quiets it: on a
# CPU host with libtpu installed, jax would start libtpu, which prints its
# init errors and holds /tmp/libtpu_lockfile for the whole measurement.
quiet.quiet_native_logs()


class ChildFailed(RuntimeError):
  """A child exited non-zero or printed no result (out of memory, most
  likely); its stderr is above."""


_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _within(root: str, path: str) -> str | None:
  """`path` relative to `root` when it lies there, else None."""
  path, root = os.path.abspath(path), os.path.abspath(root)
  return os.path.relpath(path, root) if os.path.commonpath(
      [root, path]) == root else None


def portable(argv: list[str]) -> list[str]:
  """`argv` as another machine reruns it: a path in the repository
  relative to its root, any other absolute path the placeholder of its
  flag (`--nmt-workdir /x/y` -> `--nmt-workdir NMT_WORKDIR`)."""
  out = []
  for i, arg in enumerate(argv):
    if os.path.isabs(arg):
      flag = argv[i - 1] if i and argv[i - 1].startswith("--") else "--path"
      arg = _within(_ROOT, arg) or flag.lstrip("-").replace("-", "_").upper()
    out.append(arg)
  return out


def portable_path(path: str, placeholder: str) -> str:
  """An input path as a result file records it, naming no folder of this
  machine: relative to the repository's root, or `$PARAFLAX_DATA_DIR/...`
  in the corpora folder, else `placeholder`."""
  from paraflax.data import paths  # pylint: disable=g-import-not-at-top
  if (rel := _within(_ROOT, path)) is not None:
    return rel
  if (rel := _within(str(paths.data_dir()), path)) is not None:
    return f"${paths.ENV_VAR}/{rel}"
  return placeholder


# When this process started, and the load then: a result's span and load.
_STARTED = time.time()
_LOAD_AT_START = os.getloadavg()
# The packages a figure of paraflax's depends on; a peer's come from its
# own venv (write_result's `peers`).
_PACKAGES = ("paraflax", "jax", "jaxlib", "flax", "optax", "numpy",
             "tensorflow", "faiss-cpu", "libtpu")


def _git(*args: str) -> str:
  proc = subprocess.run(["git", "-C", _ROOT, *args], capture_output=True,
                        text=True, check=False)
  return proc.stdout.strip() if proc.returncode == 0 else ""


def commit() -> str:
  """HEAD, with "+changes" when tracked files other than the record
  (lab/results/, which a benchmark writes as it runs) differ from it."""
  head = _git("rev-parse", "HEAD") or "unknown"
  return head + ("+changes" if _git(
      "status", "--porcelain", "--untracked-files=no", "--", ".",
      ":(exclude)lab/results") else "")


def _cpuinfo() -> dict[str, str]:
  """The first processor's fields of /proc/cpuinfo ({} where it has none)."""
  fields: dict[str, str] = {}
  try:
    with open("/proc/cpuinfo", encoding="utf-8") as f:
      for line in f:
        if not line.strip():
          break
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
  except OSError:
    pass
  return fields


def _cpu_model() -> str:
  return (_cpuinfo().get("model name") or platform.processor()
          or "unknown")


def cpu_id() -> str:
  """The CPU's family, model and stepping (/proc/cpuinfo): hosts that a
  virtual machine names alike ("AMD EPYC") can be unlike generations, whose
  features XLA:CPU compiles for."""
  fields = _cpuinfo()
  return (f"family {fields.get('cpu family', '?')}, model "
          f"{fields.get('model', '?')}, stepping {fields.get('stepping', '?')}")


def _gpus() -> list[str]:
  try:
    proc = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"],
        capture_output=True, text=True, check=False, timeout=20)
  except (OSError, subprocess.TimeoutExpired):
    return []
  return [l.strip() for l in proc.stdout.splitlines() if l.strip()]


def versions(names: tuple[str, ...] = _PACKAGES) -> dict[str, str]:
  """The installed version of each package of `names` that is installed."""
  from importlib import metadata  # pylint: disable=g-import-not-at-top
  out = {}
  for name in names:
    try:
      out[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
      pass
  return out


def run_facts(script: str, argv: list[str] | None) -> dict[str, Any]:
  """The head of a result file: how to rerun it, from which commit, when,
  and on what."""
  return {
      # The script from the repository's root: a command any checkout runs.
      "command": shlex.join([
          os.path.relpath(os.path.abspath(script), _ROOT),
          *portable(argv if argv is not None else sys.argv[1:])]),
      "commit": commit(),
      "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(_STARTED)),
      "hardware": {"cpu": _cpu_model(), "cpu_id": cpu_id(),
                   "cores": os.cpu_count(),
                   "gpus": _gpus(), "name": hardware()},
      "cpu_count": os.cpu_count(), "platform": platform.platform(),
      "load_average": _LOAD_AT_START, "versions": versions()}


def write_result(path: str, result: dict[str, Any], *,
                 peers: dict[str, str] | None = None) -> None:
  """Writes `result` (whose head is `run_facts`) to `path` whole, with the
  run's span: wall and CPU seconds of this process and its children, the
  load at the end, the peers' versions, and, when lab/run.py ran what it
  reads first, the records of those needs; and enters its sha256 in
  lab/results/manifest.json when `path` lies in lab/results/."""
  sys.path.insert(0, os.path.join(_ROOT, "lab", "tools"))
  import manifest  # pylint: disable=g-import-not-at-top
  import run_needs  # pylint: disable=g-import-not-at-top
  from paraflax import files  # pylint: disable=g-import-not-at-top
  if "command" not in result:
    raise ValueError("a result starts from children.run_facts(...)")
  usage = [resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                            resource.RUSAGE_CHILDREN)]
  result = {**result, "run": {
      "wall_s": round(time.time() - _STARTED, 2),
      "cpu_s": round(sum(u.ru_utime + u.ru_stime for u in usage), 2),
      "load_average_at_end": os.getloadavg(), "peers": peers or {}}}
  if needs := os.environ.get(run_needs.RECORD_VARIABLE):
    result["run"]["needs"] = json.loads(needs)
  files.write_text_atomic(path, json.dumps(result, indent=2) + "\n")
  manifest.record(path, written_by=os.path.relpath(
      os.path.abspath(sys.argv[0]), _ROOT), command=result["command"])


def trace_events(folder: str) -> list[dict[str, Any]]:
  """The events of the jax profile trace under `folder` (the Chrome trace
  jax.profiler writes, one a profile), or [] without one."""
  traces = sorted(glob.glob(os.path.join(folder, "**", "*.trace.json.gz"),
                            recursive=True))
  if not traces:
    return []
  with gzip.open(traces[-1], "rt", encoding="utf-8") as f:
    return json.load(f).get("traceEvents", [])


def peak_rss_mib() -> float:
  """This process's peak resident memory so far."""
  # ru_maxrss is KiB on Linux, bytes on macOS.
  scale = 1 if sys.platform == "darwin" else 1024
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def child_env(num_devices: int, platform: str = "cpu") -> dict[str, str]:
  """The environment of a child on `num_devices` simulated CPU devices, or
  on the devices of `platform` (jax's name: cuda, rocm, tpu) as they are."""
  env = dict(os.environ)
  env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # tf only reads data; quiet it
  env["JAX_PLATFORMS"] = platform
  if platform != "cpu":
    return env
  flags = re.sub(COUNT_FLAG + r"=\S+", "", env.get("XLA_FLAGS", ""))
  env["XLA_FLAGS"] = f"{flags} {COUNT_FLAG}={num_devices}".strip()
  # Simulated devices are host devices; a visible GPU would be used instead.
  return env


def run_child(argv: list[str], num_devices: int,
              timeout: float | None = None, platform: str = "cpu",
              python: str = sys.executable) -> dict[str, Any]:
  """Runs `python argv...` on `num_devices` devices (`child_env`) and
  returns its result; raises ChildFailed, or subprocess.TimeoutExpired."""
  proc = subprocess.run([python, *argv],
                        env=child_env(num_devices, platform),
                        stdout=subprocess.PIPE, text=True, check=False,
                        timeout=timeout)
  lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
  if proc.returncode or not lines:
    raise ChildFailed(f"{num_devices}-device child failed (exit "
                      f"{proc.returncode}); its stderr is above.")
  return json.loads(lines[-1])


def hardware() -> str:
  """'<cpu model>-<cores>core' from /proc/cpuinfo, as a file name part."""
  model = _cpu_model()
  slug = re.sub(r"[^a-z0-9]+", "-", re.sub(r"\(r\)|\(tm\)|cpu|processor",
                                            "", model.lower())).strip("-")
  return f"{slug or 'cpu'}-{os.cpu_count()}core"
