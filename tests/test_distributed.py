"""Several processes start each newly compiled program together (the
two-process runs themselves are in test_multihost.py)."""
import jax
import jax.numpy as jnp
import numpy as np

from paraflax.training import distributed


def _as_two_processes(monkeypatch) -> list[str]:
  events = []
  monkeypatch.setattr(jax, "process_count", lambda: 2)
  monkeypatch.setattr(distributed, "barrier",
                      lambda name: events.append(f"wait {name}"))
  return events


class _Traced:
  """A jitted function's ahead-of-time stages, recording their order."""

  def __init__(self, events: list[str]):
    self.events = events

  def lower(self, x):
    shape = np.shape(x)
    events = self.events

    class Lowered:
      def compile(self):
        events.append(f"compile {shape}")
        return lambda y: events.append(f"run {np.shape(y)}") or y

    return Lowered()


def test_one_process_calls_the_jitted_function_itself():
  fn = jax.jit(lambda x: x + 1)
  assert distributed.first_runs_together(fn, "step") is fn


def test_each_new_shape_compiles_then_waits_for_the_peers_then_runs(
    monkeypatch):
  events = _as_two_processes(monkeypatch)
  step = distributed.first_runs_together(_Traced(events), "step")
  for width in (3, 3, 5, 3, 5):
    step(np.zeros(width))
  assert events == ["compile (3,)", "wait step", "run (3,)", "run (3,)",
                    "compile (5,)", "wait step", "run (5,)", "run (3,)",
                    "run (5,)"]


def test_the_compiled_program_computes_what_jit_does(monkeypatch):
  _as_two_processes(monkeypatch)
  fn = jax.jit(lambda x, y: {"sum": x + y["b"]}, donate_argnums=0)
  step = distributed.first_runs_together(fn, "step")
  out = step(jnp.arange(4.0), {"b": jnp.ones(4)})
  np.testing.assert_array_equal(out["sum"], np.arange(4.0) + 1)
