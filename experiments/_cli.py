"""The shared command line of every experiment binary (scenic's `app.run` wrapper).

Each `experiments/<name>.py` ends with `_cli.main(run)`. This module defines the three
flags (`--config`, locked; `--workdir`; `--distributed`), starts JAX (distributed when
asked), calls `run(config, workdir)`, and turns bad input into a one-line error.
"""

import sys

from absl import app
from absl import flags
from absl import logging
from ml_collections import config_flags


def _define_flags():
  if "config" in flags.FLAGS:  # Already defined in this process.
    return
  config_flags.DEFINE_config_file(
    "config", None, "Config file, e.g. configs/x.py:quick.", lock_config=True
  )
  flags.DEFINE_string("workdir", None, "Output directory; rerun to resume.")
  flags.DEFINE_bool(
    "distributed", False, "Call jax.distributed.initialize() (multi-host)."
  )
  flags.mark_flags_as_required(["config", "workdir"])


class _QuietLibraries:
  """Drops INFO lines from orbax (dozens per checkpoint); warnings still show."""

  def filter(self, record) -> bool:
    return record.levelno > 20 or "/orbax/" not in record.pathname


def main(run) -> None:
  """Runs `run(config, workdir)` as an absl app."""
  _define_flags()

  def _main(argv):
    if len(argv) > 1:
      raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    from lib.core.errors import UserError
    from lib.train import Preempted
    from lib.train import initialize_distributed

    try:  # ml_collections loads the config file lazily, on first use.
      config = flags.FLAGS.config
      config.keys()
    except OSError as e:
      sys.exit(f"error: cannot load the --config file: {_root_cause(e)}")
    logging.set_verbosity(logging.INFO)
    logging.get_absl_handler().addFilter(_QuietLibraries())
    try:
      initialize_distributed(flags.FLAGS.distributed)
      run(config, flags.FLAGS.workdir)
    except UserError as e:
      logging.error("%s", e)
      sys.exit(f"error: {e}")
    except Preempted as e:
      logging.warning("%s", e)
      sys.exit(143)

  app.run(_main, flags_parser=_parse_flags)


def _parse_flags(argv):
  """absl's parser, with a one-line error for a bad config file or override."""
  overrides = [a.split("=")[0] for a in argv[1:] if a.startswith("--config.")]
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:  # A config file that raised: keep its last line.
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    sys.exit(f"error: {lines[-1] if lines else e}")
  except (AttributeError, KeyError) as e:
    sys.exit(
      f"error: unknown config key {str(e).strip(chr(34))} in "
      f"{' '.join(overrides) or '--config'}"
    )
  except (TypeError, ValueError) as e:
    sys.exit(f"error: bad config: {e}")
  except OSError as e:  # A config file that cannot be read.
    sys.exit(f"error: cannot load the --config file: {_root_cause(e)}")


def _root_cause(e: BaseException) -> str:
  while e.__cause__ is not None or e.__context__ is not None:
    e = e.__cause__ or e.__context__
  lines = [line.strip() for line in str(e).splitlines() if line.strip()]
  return lines[-1] if lines else type(e).__name__
