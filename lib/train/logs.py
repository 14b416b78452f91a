"""Logging set-up for notebooks and scripts that do not go through absl's app.run."""

import logging as py_logging

from absl import logging


class _QuietLibraries(py_logging.Filter):
  """Drops INFO lines from orbax (dozens per checkpoint); warnings still show."""

  def filter(self, record) -> bool:
    return record.levelno > py_logging.INFO or "/orbax/" not in record.pathname


def enable_logging(level: str = "info") -> None:
  """Shows absl INFO lines (progress, "run i/N", resumes) on stderr.

  The experiment binaries do this themselves; call it once in a notebook:

      import lib.train
      lib.train.enable_logging()
  """
  logging.set_verbosity(level)
  logging.use_absl_handler()
  handler = logging.get_absl_handler()
  if not any(isinstance(f, _QuietLibraries) for f in handler.filters):
    handler.addFilter(_QuietLibraries())
  # Outside app.run, absl writes to the sys.stderr of the moment (a notebook's
  # cell output) after a one-time warning that flags are not parsed: skip it.
  logging._warn_preinit_stderr = False  # noqa: SLF001
