"""SIGTERM and SIGINT for the whole process: stop at a safe point, say so, resume.

A cluster scheduler sends SIGTERM and waits a grace period before SIGKILL; a
user presses Ctrl-C (SIGINT). Either way the run should stop with one
"preempted" line and exit code 128 + signal (143, 130), and a rerun of the same
command should resume.

`install()` (the experiment CLI calls it first) makes both signals raise
`Preempted` in the main thread:

* inside a `deferred()` region (a `lib.train.train` call: its state is only
  consistent at a chunk boundary, where it saves a checkpoint) the signal sets
  a flag; the region stops at its next safe point, and leaving the region with
  the flag set raises `Preempted` at once;
* anywhere else (compiling, an evaluation, a bootstrap, a fit, between phases)
  nothing is in flight that a rerun would not redo, so `Preempted` is raised at
  once. Python runs signal handlers between bytecodes, so a long compiled call
  finishes first: host loops over blocks (resamples, tasks, settings) stop at
  the next block.

A second signal while the first is pending raises at once, even in a deferred
region (an impatient second Ctrl-C). Without `install()` (a notebook, a
library user) nothing changes, except that a `deferred()` region honours
SIGTERM for its duration, as `lib.train.train` always did.

`Preempted` derives from BaseException, like KeyboardInterrupt, so that code
which recovers from an `Exception` (a damaged checkpoint, a failed figure) never
swallows it.
"""

import contextlib
import signal
import threading

from absl import logging

_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Preempted(BaseException):  # noqa: N818 (it is a signal, not an error)
  """The run was told to stop (SIGTERM/SIGINT); a rerun resumes.

  Attributes:
    signum: the signal received; the CLI exits with 128 + signum.
  """

  def __init__(self, message: str, signum: int = signal.SIGTERM):
    super().__init__(message)
    self.signum = int(signum)

  @property
  def exit_code(self) -> int:
    return 128 + self.signum


_state = {"signum": None, "deferred": 0, "previous": {}}


def _name(signum) -> str:
  return signal.Signals(signum).name


def _handle(signum, frame):
  del frame
  pending = _state["signum"] is not None
  if not pending:
    _state["signum"] = signum
  if _state["deferred"] and not pending:
    logging.warning(
      "%s received: stopping at the next safe point (a checkpoint)",
      _name(signum),
    )
    return
  raise Preempted(
    f"preempted ({_name(signum)}) with nothing in flight: rerun the same "
    "command to resume",
    signum,
  )


def _main_thread() -> bool:
  return threading.current_thread() is threading.main_thread()


def install(signals=_SIGNALS) -> None:
  """Handles `signals` for the whole process (main thread only; idempotent)."""
  if not _main_thread():
    return
  for s in signals:
    if s not in _state["previous"]:
      _state["previous"][s] = signal.signal(s, _handle)


def uninstall() -> None:
  """Restores the handlers `install` replaced and clears a pending request."""
  for s, previous in _state["previous"].items():
    signal.signal(s, previous)
  _state["previous"].clear()
  _state["signum"] = None


def installed() -> bool:
  return bool(_state["previous"])


def requested() -> bool:
  """Whether a stop was requested in this process."""
  return _state["signum"] is not None


def signal_received() -> int:
  """The signal that requested the stop (SIGTERM if another host's did)."""
  return _state["signum"] or signal.SIGTERM


def check(where: str = "") -> None:
  """An explicit safe point: raises Preempted if a stop was requested."""
  signum = _state["signum"]
  if signum is not None:
    raise Preempted(
      f"preempted ({_name(signum)}){' ' + where if where else ''}: rerun the "
      "same command to resume",
      signum,
    )


@contextlib.contextmanager
def deferred():
  """A region whose work stops only at its own safe points (see module doc).

  Nested regions count; the outermost one re-raises a pending stop on a clean
  exit when the process-wide handler is installed. Without it, SIGTERM is
  handled for the region's duration only (the previous handler comes back).
  """
  local = not installed() and _main_thread()
  if local:
    install((signal.SIGTERM,))
  _state["deferred"] += 1
  try:
    yield
  finally:
    _state["deferred"] -= 1
    if local:
      uninstall()
  if not local and not _state["deferred"]:
    check("at the end of a training run")
