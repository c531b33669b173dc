"""Named moments between writes, where a crash test can kill the process.

`PARAFLAX_CRASH_AT=<moment>:<n>` sends SIGKILL to this process the n-th time
it reaches `<moment>`, so a test can stop a command between any two of its
writes and check that rerunning it ends as an uninterrupted run;
`<moment>:<n>@<i>` only in process `i` of a multi-process run (its
`JAX_PROCESS_ID`). Unset (as outside tests) a moment costs one environment
lookup.
"""
from __future__ import annotations

import collections
import os
import signal

ENV = "PARAFLAX_CRASH_AT"
_reached: collections.Counter[str] = collections.Counter()


def moment(name: str) -> None:
  spec = os.environ.get(ENV)
  if not spec:
    return
  spec, _, process = spec.partition("@")
  if spec.rpartition(":")[0] != name or (
      process and process != os.environ.get("JAX_PROCESS_ID")):
    return
  _reached[name] += 1
  if _reached[name] == int(spec.rpartition(":")[2]):
    os.kill(os.getpid(), signal.SIGKILL)
