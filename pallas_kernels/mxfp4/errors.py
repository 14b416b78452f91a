"""Bad-input errors of the MXFP4 ops, printed as one line by the experiment CLI.

`pallas_kernels` is self-contained (it may not import `lib`), so it cannot
raise `lib.core.errors` types. Its user-facing errors instead subclass the
builtin type a caller would catch (ValueError, TypeError, RuntimeError) and
carry the class attribute `user_error = True`, which `experiments/_cli.py`
treats like a `lib.core.errors.UserError`: one `error: ...` line, exit code 1.
"""


class MxInputError(ValueError):
  """An MXFP4 op got arguments it cannot take (shapes, names, options)."""

  user_error = True


class MxDTypeError(TypeError):
  """An MXFP4 op got an array of a dtype it cannot take."""

  user_error = True
