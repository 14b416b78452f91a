"""The shared command line of every experiment binary (scenic's `app.run` wrapper).

Each `experiments/<name>.py` ends with `_cli.main(run, check=check_config)`.
This module defines the flags (`--config`, locked; `--workdir`; `--distributed`
and its `--distributed_timeout_s`), starts JAX (distributed when asked), checks
the config (`check(config)`: the binary's own checks, then the training
sections) before anything touches the workdir, turns on a persistent compilation
cache in it (`default_compilation_cache`), takes the workdir's lock (one run per
workdir, `lib.train.workdir.lock`), calls `run(config, workdir)`, and
turns bad input into a one-line error. `run` calls its `check_config` first as
well, for callers in process (tests, notebooks). SIGTERM and
SIGINT anywhere stop the run with a "preempted" line and exit code 128 + signal
(`lib.train.preemption`); a rerun resumes.

What counts as bad input (printed as `error: <message>` on one line, exit code 1,
no traceback): any `lib.core.errors.UserError`, any exception whose class
says `user_error = True`, and an OSError of the filesystem (full disk, quota,
read-only, permissions), named with its path. The marker is for code that may
not import `lib` (`pallas_kernels`: e.g. the FFI loader's "library not built" error, an
`mx_matmul` shape mismatch), so it keeps its own ValueError/RuntimeError
subclasses. Anything else is a bug and keeps its traceback.
"""

import errno
import os
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
  flags.DEFINE_float(
    "distributed_timeout_s",
    300.0,
    "With --distributed: seconds to wait for every process to join.",
  )
  flags.mark_flags_as_required(["config", "workdir"])


class _QuietLibraries:
  """Drops INFO lines from orbax (dozens per checkpoint); warnings still show."""

  def filter(self, record) -> bool:
    return record.levelno > 20 or "/orbax/" not in record.pathname


def main(run, check=None) -> None:
  """Runs `run(config, workdir)` as an absl app, `check(config)` first."""
  _define_flags()

  def _main(argv):
    from lib.train import preemption

    preemption.install()  # SIGTERM/SIGINT: a "preempted" line, not a kill
    if len(argv) > 1:
      sys.exit(
        f"error: unexpected positional argument(s) {argv[1:]}: every "
        "setting is a flag (--config.<key>=<value>, --workdir=...)"
      )
    from lib.core.errors import UserError
    from lib.train import initialize_distributed

    try:  # ml_collections loads the config file lazily, on first use.
      config = flags.FLAGS.config
      config.keys()
    except OSError as e:
      sys.exit(f"error: cannot load the --config file: {_root_cause(e)}")
    logging.set_verbosity(logging.INFO)
    logging.get_absl_handler().addFilter(_QuietLibraries())
    try:
      initialize_distributed(
        flags.FLAGS.distributed, timeout_s=flags.FLAGS.distributed_timeout_s
      )
      execute(run, config, flags.FLAGS.workdir, check)
    except preemption.Preempted as e:
      logging.warning("%s", e)
      _exit_now(e.exit_code)
    except Exception as e:
      if not is_user_error(e, UserError):
        raise
      message = one_line(e)
      logging.error("%s", message)
      sys.exit(f"error: {message}")

  app.run(_main, flags_parser=_parse_flags)


def _exit_now(code: int) -> None:
  """Exits with `code` at once, skipping the interpreter's teardown.

  A signal can land while JAX is tracing or compiling (the handler raises in
  whatever Python frame runs, possibly one that XLA called back into); tearing
  the interpreter down from there segfaulted now and then (exit 139, not 143).
  Nothing is lost: `Preempted` has already unwound through `train`'s
  checkpoint close and the workdir lock.
  """
  logging.flush()
  sys.stdout.flush()
  sys.stderr.flush()
  os._exit(code)


# Programs that compile in at least this many seconds enter a persistent
# cache (JAX's default, 1 s, leaves out many inits); the reproduce driver
# gives its children the same.
CACHE_MIN_COMPILE_SECS = 0.5


def default_compilation_cache(workdir: str) -> str | None:
  """Turns on JAX's persistent compilation cache at `<workdir>/jax_cache`.

  A program compiled once is then loaded, not compiled again, wherever this
  run traces it anew: the same step under a new closure (another method or
  run of a sweep, e.g. quartet_scaling's runs of one size at each token
  count) and every program of a rerun or resumed run. Cached executables are
  the compiled ones, so no number changes. Left alone where a cache is set
  already (`JAX_COMPILATION_CACHE_DIR`, as `experiments.reproduce` gives its
  children), for a remote workdir and for a multi-process run.

  JAX decides once, at a process's first compilation, whether it caches:
  this must run before anything compiles (the config checks do not).

  Returns:
    the cache directory turned on here, or None.
  """
  import jax

  if (
    jax.config.jax_compilation_cache_dir
    or "://" in workdir
    or jax.process_count() > 1
  ):
    return None
  path = os.path.join(os.path.abspath(workdir), "jax_cache")
  jax.config.update("jax_compilation_cache_dir", path)
  if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
    jax.config.update(
      "jax_persistent_cache_min_compile_time_secs", CACHE_MIN_COMPILE_SECS
    )
  return path


def execute(run, config, workdir, check=None):
  """What the CLI does once JAX is up: the steps tests can call in process.

  The config is checked before the workdir is touched: the training sections
  first (a bad log_every must not reach an experiment's own checks, which
  divide by it), then the binary's `check(config)`; so a bad override writes
  no config.json that a corrected rerun would refuse. Then, with the
  persistent compilation cache on (`default_compilation_cache`), `run(config,
  workdir)` runs holding the workdir's lock. Errors propagate; `main` prints
  them.
  """
  from lib.train import workdir as workdir_lib

  workdir_lib.validate_sections(config)
  if check is not None:
    check(config)
  default_compilation_cache(workdir)
  with workdir_lib.lock(workdir):
    return run(config, workdir)


# OSError numbers that say the filesystem refused, not that the code is wrong.
_FILESYSTEM_ERRNOS = frozenset(
  (
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EROFS,
    errno.EACCES,
    errno.EPERM,
    errno.EIO,
    errno.EMFILE,
    errno.ENFILE,
  )
)


def is_user_error(e: BaseException, user_error_type=None) -> bool:
  """A `UserError`, an exception whose class sets `user_error = True`, or an
  OSError of the filesystem (full disk, quota, read-only, permissions)."""
  if user_error_type is not None and isinstance(e, user_error_type):
    return True
  if isinstance(e, OSError) and e.errno in _FILESYSTEM_ERRNOS:
    return True
  return getattr(type(e), "user_error", False) is True


def one_line(e: BaseException) -> str:
  """The exception's message on one line (its lines joined); a filesystem
  OSError as '<path>: <reason>'."""
  if isinstance(e, OSError) and e.errno in _FILESYSTEM_ERRNOS:
    return f"{e.filename or 'a file'}: {e.strerror or e}"
  lines = [line.strip() for line in str(e).splitlines() if line.strip()]
  return " ".join(lines) or type(e).__name__


def _parse_flags(argv):
  """absl's parser, with a one-line error for a bad config file or override."""
  overrides = [a.split("=")[0] for a in argv[1:] if a.startswith("--config.")]
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:  # A config file that raised: keep its last line.
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    sys.exit(f"error: {lines[-1] if lines else e}")
  except (AttributeError, KeyError) as e:
    # ml_collections raises KeyError("'key'"), or an AttributeError holding
    # one, whose message has a second line 'Did you mean "keys" instead of
    # "key"?' for a near miss (str() would show it as a repr with a literal
    # backslash-n).
    text = e
    while isinstance(text, AttributeError | KeyError) and text.args:
      text = text.args[0]
    key, _, hint = str(text).strip(chr(34)).partition("\n")
    named = [o for o in overrides if key.strip("'") in o.split(".")[1:]]
    hint = f" ({hint.strip()})" if hint.strip() else ""
    sys.exit(
      f"error: unknown config key {key} in "
      f"{' '.join(named or overrides) or '--config'}{hint}"
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
