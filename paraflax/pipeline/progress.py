"""The pipeline's progress lines: elapsed time and the time left, from the
rates this run measured (a train stage's steps a second after its
warm-up; the finished stages' times), the preset's `seconds_per_unit`
only where nothing is measured yet."""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence

from paraflax.pipeline import plan as plan_lib
from paraflax.pipeline import stages

EVERY = 60.0  # seconds between two lines inside a train stage, at least


def clock(seconds: float) -> str:
  seconds = int(round(seconds))
  return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Rate:
  """Work done a second, measured from the first report on (the warm-up
  before it, a train step's compilation and the first steps, left out) to
  the latest; None until a later report has more work done."""

  def __init__(self, now: Callable[[], float] = time.monotonic):
    self.now = now
    self.origin: tuple[float, float] | None = None  # (time, done)
    self.latest: tuple[float, float] | None = None

  def update(self, done: float) -> None:
    at = (self.now(), done)
    if self.origin is None:
      self.origin = at
    self.latest = at

  def measured(self) -> tuple[float, float] | None:
    """(seconds, work) since the warm-up, or None."""
    if self.origin is None or self.latest is None:
      return None
    seconds = self.latest[0] - self.origin[0]
    work = self.latest[1] - self.origin[1]
    return (seconds, work) if seconds > 0 and work > 0 else None

  def per_second(self) -> float | None:
    measured = self.measured()
    return measured[1] / measured[0] if measured else None


class Progress:
  """One line per stage start and finish, and inside a train stage one
  every EVERY seconds: the elapsed time and the time left. The running
  train stage's time left is its steps left at its measured rate; another
  stage's is its work times the preset's `seconds_per_unit`, scaled by
  how much slower or faster this run's measured work went than that (a
  train stage's steps after its warm-up, another stage's whole time)."""

  def __init__(self, plan: plan_lib.Plan, todo: Sequence[str],
               now: Callable[[], float] = time.monotonic):
    self.plan, self.todo, self.now = plan, list(todo), now
    self.start = now()
    self.spent = self.estimated = 0.0  # finished stages: measured, guessed
    self.rate: Rate | None = None  # the running train stage's
    self.running: str | None = None
    self.ran: tuple[str, tuple[float, float] | None] | None = None
    self.steps = (0, 0)  # its (step, train_steps) at the latest report
    self.said = -EVERY

  def estimate(self, stage: str) -> float:
    return (stages.STAGES[stage].units(self.plan)
            * self.plan.config.seconds_per_unit[stage])

  def _speed(self) -> float | None:
    """Measured seconds over the preset's for the same work, or None."""
    spent, estimated = self.spent, self.estimated
    measured = self.rate.measured() if self.rate else None
    if measured:
      spent += measured[0]
      estimated += measured[1] * self.plan.config.seconds_per_unit[
          self.running]
    return spent / estimated if estimated else None

  def _left(self, todo: Sequence[str]) -> tuple[float, bool]:
    """Seconds left for `todo`, and whether measured rates gave them."""
    speed = self._speed()
    left = 0.0
    for stage in todo:
      rate = self.rate.per_second() if self.rate and stage == self.running \
          else None
      if rate:
        left += (self.steps[1] - self.steps[0]) / rate
      else:
        left += (speed or 1.0) * self.estimate(stage)
    return left, speed is not None

  def _line(self, index: int, stage: str, event: str, todo: Sequence[str],
            what: str = "") -> None:
    left, measured = self._left(todo)
    basis = "" if measured else ", by seconds_per_unit: nothing measured yet"
    print(f"== pipeline [{index + 1}/{len(self.todo)}] {stage}: {event} "
          f"(elapsed {clock(self.now() - self.start)}, about {clock(left)} "
          f"left{basis}{what})", flush=True)

  def say(self, index: int, stage: str, event: str) -> None:
    starts = event == "start"
    todo = self.todo[index:] if starts else self.todo[index + 1:]
    what = f", {stages.STAGES[stage].what}" if starts else ""
    self._line(index, stage, event, todo, what)

  def step(self, index: int, stage: str, step: int, last: int) -> None:
    """A train stage's report (`loop.watching`): its rate, and a line
    every EVERY seconds once the rate is measured."""
    self.steps = (step, last)
    self.rate.update(step)
    rate = self.rate.per_second()
    if rate is None or self.now() - self.said < EVERY:
      return
    self.said = self.now()
    self._line(index, stage, f"step {step}/{last}, {rate:.2f} steps/s "
               f"measured after step {int(self.rate.origin[1])}",
               self.todo[index:])

  @contextlib.contextmanager
  def running_stage(self, index: int, stage: str) -> Iterator[None]:
    """While `stage` runs: its train steps' reports feed its rate."""
    from paraflax.training import loop  # pylint: disable=g-import-not-at-top
    self.rate, self.running, self.said = Rate(self.now), stage, self.now()
    try:
      with loop.watching(lambda s, last: self.step(index, stage, s, last)):
        yield
    finally:
      self.ran = (stage, self.rate.measured())
      self.rate = self.running = None

  def finished(self, stage: str, seconds: float) -> None:
    """A finished stage's measured work: a train stage's steps after its
    warm-up, where it measured them; else its `seconds`, all its work."""
    measured = self.ran[1] if self.ran and self.ran[0] == stage else None
    if measured:
      self.spent += measured[0]
      self.estimated += measured[1] * self.plan.config.seconds_per_unit[stage]
    else:
      self.spent += seconds
      self.estimated += self.estimate(stage)
