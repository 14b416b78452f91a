"""The Quartet linear layer: all three GEMMs of y = x W^T in MXFP4.

Forward: x and W are rotated by H32 along K and quantized with QuEST (RMS
scale, RTN); the GEMM multiplies the two rotated operands, so no un-rotation is
needed. The clip masks are the "trust" gradient masks.

Backward (custom_vjp), with e = dL/dy and one random H32 diag(s) per call:
  dX_r = Q_b(e along N) Q_b(Wh^T along N)^T      [T, K]
  dW_r = Q_b(e^T along T) Q_b(Xh^T along T)^T    [N, K]
  dx = (dX_r * M_x) H32,  dW = (dW_r * M_w) H32   (per K-group)
where Q_b is absmax x 3/4 + stochastic rounding, and Xh, Wh are the forward's
already-quantized (rotated) tensors, saved as FP4 codes + scales + mask bits.

fmt="nvfp4" keeps that structure (H32 rotations, the same three GEMMs, FP4
residuals) in NVIDIA's format, the FP4 GEMM cuBLASLt documents: E2M1 with one
E4M3 scale per 16 and an fp32 tensor scale. Forward "rtn": two-level NVFP4
with round-to-nearest (no QuEST clip, so no trust mask); backward "sr":
stochastic rounding with block scales rounded up (unbiased). Ours, not the
paper's: Quartet is defined for MXFP4.

References:
  Castro et al., "Quartet: Native FP4 Training Can Be Optimal for Large
  Language Models", NeurIPS 2025 (arXiv 2505.14669), Algorithm 1.
  NVIDIA, "Pretraining Large Language Models with NVFP4" (arXiv 2509.25149).
"""

import functools

import jax
import jax.numpy as jnp

from lib.core import errors
from lib.core import rng
from lib.quant import hadamard
from pallas_kernels.mxfp4 import ops
from pallas_kernels.mxfp4 import reference
from pallas_kernels.mxfp4.reference import MXTensor

GROUP = reference.GROUP
FORMATS = ("mxfp4", "nvfp4")
# Forward quantizers per format; the first is the format's default.
FORWARD_MODES = {"mxfp4": ("quest", "absmax", "bf16"), "nvfp4": ("rtn", "bf16")}
BACKWARD_MODES = ("sr", "rtn", "bf16")
# The GEMMs' precision: float32, or torch's bf16 autocast (`quartet_linear`).
COMPUTE_DTYPES = ("float32", "bfloat16")


DTypeError = errors.DTypeError


def _check_args(x, w, forward, backward, implementation, fmt) -> None:
  if fmt not in FORMATS:
    raise errors.ConfigError(f"fmt={fmt!r} is not one of {FORMATS}")
  if forward not in FORWARD_MODES[fmt]:
    raise errors.ConfigError(
      f"forward={forward!r} is not one of {FORWARD_MODES[fmt]} (fmt={fmt!r})"
    )
  if backward not in BACKWARD_MODES:
    raise errors.ConfigError(
      f"backward={backward!r} is not one of {BACKWARD_MODES}"
    )
  if implementation not in ops.IMPLEMENTATIONS:
    raise errors.ConfigError(
      f"implementation={implementation!r} is not one of {ops.IMPLEMENTATIONS}"
    )
  for name, a in (("x", x), ("W", w)):
    if not jnp.issubdtype(a.dtype, jnp.floating):
      raise DTypeError(
        f"quartet_linear needs floating-point {name}, got dtype {a.dtype}"
      )
  if w.ndim != 2 or x.ndim < 1 or x.shape[-1] != w.shape[1]:
    raise errors.ShapeError(
      f"quartet_linear computes x[..., K] @ W[N, K]^T: got x {x.shape}, "
      f"W {w.shape}"
    )
  n, k = w.shape
  if k % GROUP or n % GROUP:
    raise errors.ShapeError(
      f"MXFP4 groups 32 elements along each GEMM's contraction axis, so K and "
      f"N must be multiples of 32: got K={k}, N={n} (W {w.shape})"
    )


def needs_key(backward: str, rerotate: bool) -> bool:
  """Whether the backward draws random numbers: SR's uniforms, or the
  re-rotation's signs of a quantized backward. "bf16", and "rtn" without
  re-rotation, are deterministic."""
  return backward == "sr" or (backward == "rtn" and rerotate)


def _check_key(key) -> None:
  """One PRNG key, typed or raw, or None: the forward never reads it, so a
  bad one would only fail inside the backward, under jax.grad."""
  if key is None:
    return
  dtype = getattr(key, "dtype", None)
  if rng.is_typed_key(key):
    if key.shape != ():
      raise errors.ShapeError(
        f"quartet_linear takes one PRNG key, got a key array of shape "
        f"{key.shape} (jax.vmap over keys, or fold in a layer index)"
      )
    return
  if dtype != jnp.uint32 or key.ndim != 1:
    shape = getattr(key, "shape", None)
    raise errors.DTypeError(
      "quartet_linear's key must be a PRNG key (jax.random.key(seed) or "
      f"jax.random.PRNGKey(seed)), got {type(key).__name__} of dtype {dtype} "
      f"and shape {shape}"
    )
  jax.random.wrap_key_data(key)  # Names raw key data of the wrong size.


def quartet_linear(
  x: jax.Array,
  w: jax.Array,
  key: jax.Array | None,
  *,
  forward: str | None = None,
  backward: str = "sr",
  rerotate: bool = True,
  implementation: str | None = None,
  fmt: str = "mxfp4",
  compute_dtype: str = "float32",
) -> jax.Array:
  """y = x W^T with Quartet's FP4 forward and backward.

  Args:
    x: [..., K] activations (f32 or bf16); leading axes are flattened into
      T tokens, padded with zero rows to a multiple of 32 for the dW GEMM.
    w: [N, K] weight; K and N multiples of 32.
    key: typed PRNG key for the backward's random signs and SR uniforms
      (fold in the step and the layer index). None: no randomness, for a
      forward that is never differentiated (evaluation) or a deterministic
      backward (`needs_key` False); differentiating a random backward
      without a key raises ConfigError when jax.grad traces it, rather than
      reuse one fixed key at every step.
    forward: MXFP4: "quest" (Quartet), "absmax" (absmax x 3/4 RTN + H32, no
      clipping) or "bf16" (no forward quantization); NVFP4: "rtn" or "bf16".
      None: the format's first ("quest", "rtn").
    backward: "sr" (Quartet), "rtn" or "bf16" (exact backward GEMMs, still
      masked by the forward's trust mask).
    rerotate: redraw random Hadamard signs per backward call (else plain H32).
      As in the official code the signs act after H, so for the MXFP4
      absmax quantizer this gives the same backward GEMMs as plain H32 (see
      `lib.quant.hadamard`): only the SR uniforms differ between calls.
    implementation: kernels for quantizers and GEMMs (None|"xla"|"pallas"|
      "ffi"); NVFP4 quantizes in XLA and multiplies through the FFI when
      selected, else XLA.
    fmt: "mxfp4" (Quartet: E2M1 + E8M0 per 32) or "nvfp4" (E2M1 + E4M3 per
      16 + an fp32 tensor scale; see the module docstring).
    compute_dtype: "float32" (every GEMM in float32; the unquantized ("bf16")
      ones at HIGHEST precision) or "bfloat16" (torch bf16 autocast, the
      official trainer's: the unquantized GEMMs take bf16-rounded operands
      with float32 accumulation, and every GEMM's output, quantized or not,
      is rounded to bf16, as autocast's bf16 `F.linear` returns; the
      quantizers still read the float32 operands, and the masks and
      un-rotations run in float32).

  Returns:
    y [..., N] in x's dtype.

  Raises:
    ShapeError, DTypeError, ConfigError on bad input. Non-finite x or W give
    NaN outputs in the affected rows (see `pallas_kernels.mxfp4.reference`).
  """
  if forward is None and fmt in FORMATS:
    forward = FORWARD_MODES[fmt][0]
  _check_args(x, w, forward, backward, implementation, fmt)
  if compute_dtype not in COMPUTE_DTYPES:
    raise errors.ConfigError(
      f"compute_dtype={compute_dtype!r} is not one of {COMPUTE_DTYPES}"
    )
  _check_key(key)
  lead = x.shape[:-1]
  if x.size == 0 or w.size == 0:
    # No tokens, or K or N = 0: the product is all zeros (its shape may be
    # empty), and so is every gradient; the FP4 groups would divide by zero.
    return jnp.zeros((*lead, w.shape[0]), x.dtype)
  x2 = x.reshape(-1, x.shape[-1])
  t = x2.shape[0]
  pad = -t % GROUP
  if pad:
    x2 = jnp.pad(x2, ((0, pad), (0, 0)))
  # fp32 inside; the casts' own VJPs return gradients in the input dtypes.
  y = _QUARTET_MATMUL[compute_dtype](
    x2.astype(jnp.float32),
    w.astype(jnp.float32),
    key,
    forward,
    backward,
    rerotate,
    implementation,
    fmt,
  )
  return y[:t].reshape(*lead, w.shape[0]).astype(x.dtype)


def _forward_quantize(a, forward, implementation, fmt):
  """Returns (rotated-domain operand, packed mask bits or None)."""
  if forward == "bf16":
    return a, None  # unquantized, unrotated
  if fmt == "nvfp4":
    return reference.quantize_nvfp4(reference.rotate(a)), None
  if forward == "quest":
    t, mask = ops.quantize_quest(a, implementation=implementation)
    return t, reference.pack_mask_bits(mask)
  t = ops.quantize_absmax(a, stochastic=False, implementation=implementation)
  return t, None


def _dense(a) -> jax.Array:
  if isinstance(a, MXTensor):
    return reference.dequantize(a)
  if isinstance(a, reference.NVFP4Tensor):
    return reference.dequantize_nvfp4(a)
  return a


def _matmul(a, b, implementation):
  if isinstance(a, reference.NVFP4Tensor):
    return ops.nvfp4_matmul(a, b, implementation=implementation)
  return ops.mx_matmul(a, b, implementation=implementation)


def _dense_matmul(a, b, compute_dtype):
  """a[M, C] @ b[P, C]^T unquantized: float32 at HIGHEST, or bf16 autocast.

  Under "bfloat16" the operands are rounded to bf16 and the products summed
  in float32 (torch autocast's `F.linear`: bf16 inputs, fp32 accumulation);
  the bf16 rounding of the output is `_round_output`'s.
  """
  if compute_dtype == "float32":
    return jnp.dot(a, b.T, precision=jax.lax.Precision.HIGHEST)
  dt = jnp.dtype(compute_dtype)
  return jnp.dot(
    a.astype(dt), b.T.astype(dt), preferred_element_type=jnp.float32
  )


def _round_output(y, compute_dtype):
  """A GEMM's float32 output rounded to `compute_dtype` (autocast's bf16 out)."""
  if compute_dtype == "float32":
    return y
  return y.astype(compute_dtype).astype(jnp.float32)


def _fwd(
  x,
  w,
  key,
  forward,
  backward,
  rerotate,
  implementation,
  fmt,
  compute_dtype="float32",
):
  xq, mx = _forward_quantize(x, forward, implementation, fmt)
  wq, mw = _forward_quantize(w, forward, implementation, fmt)
  if forward == "bf16":
    y = _dense_matmul(x, w, compute_dtype)
  else:
    y = _matmul(xq, wq, implementation)
  # Residuals are FP4 codes + scales (+ 1-bit masks), not bf16 copies.
  return _round_output(y, compute_dtype), (xq, wq, mx, mw, key)


def _backward_gemm(
  a, b, seeds, signs, backward, implementation, fmt, compute_dtype
):
  """a[M, C] @ b[P, C]^T with both operands quantized along C (backward)."""
  return _round_output(
    _backward_product(
      a, b, seeds, signs, backward, implementation, fmt, compute_dtype
    ),
    compute_dtype,
  )


def _backward_product(
  a, b, seeds, signs, backward, implementation, fmt, compute_dtype
):
  if backward == "bf16":
    return _dense_matmul(a, b, compute_dtype)
  stochastic = backward == "sr"
  if fmt == "nvfp4":
    qa, qb = (
      reference.quantize_nvfp4(
        reference.rotate(v, signs), stochastic=stochastic, seed=seed
      )
      for v, seed in zip((a, b), seeds)
    )
    return ops.nvfp4_matmul(qa, qb, implementation=implementation)
  qa, qb = (
    ops.quantize_absmax(
      v,
      signs=signs,
      stochastic=stochastic,
      seed=seed,
      implementation=implementation,
    )
    for v, seed in zip((a, b), seeds)
  )
  return ops.mx_matmul(qa, qb, implementation=implementation)


def _bwd(
  forward,
  backward,
  rerotate,
  implementation,
  fmt,
  res,
  e,
  compute_dtype="float32",
):
  xq, wq, mx, mw, key = res
  if key is None:
    if needs_key(backward, rerotate):
      raise errors.ConfigError(
        f"quartet_linear was differentiated with key=None, but its backward "
        f"(backward={backward!r}, rerotate={rerotate}) draws random numbers: "
        "pass a PRNG key (QuartetDense: apply(..., rngs={'quant': key}), a "
        "new key each step)"
      )
    signs, seeds = None, [None] * 4
  else:
    k_signs, k_e, k_w, k_et, k_x = jax.random.split(key, 5)
    # One sign vector per call, shared by all four backward quantizations:
    # it cancels inside each GEMM (Hb Hb^T = I).
    signs = hadamard.random_signs(k_signs) if rerotate else None
    seeds = [reference.seed_from_key(k) for k in (k_e, k_w, k_et, k_x)]
  x_hat, w_hat = _dense(xq), _dense(wq)  # rotated domain unless bf16 forward
  gemm = functools.partial(
    _backward_gemm,
    backward=backward,
    implementation=implementation,
    fmt=fmt,
    compute_dtype=compute_dtype,
  )
  dx = gemm(e, w_hat.T, seeds[:2], signs)
  dw = gemm(e.T, x_hat.T, seeds[2:], signs)
  if forward != "bf16":
    if mx is not None:
      dx = dx * reference.unpack_mask_bits(mx)
      dw = dw * reference.unpack_mask_bits(mw)
    # The 32x32 matmul form: on CPU faster than the 5-stage FWHT here.
    dx = hadamard.unrotate(dx, method="matmul")
    dw = hadamard.unrotate(dw, method="matmul")
  return dx, dw, None


def _make_quartet_matmul(compute_dtype: str):
  """The custom_vjp GEMM of one compute dtype (a closure: one per dtype)."""

  @functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5, 6, 7))
  def matmul(x, w, key, forward, backward, rerotate, implementation, fmt):
    y, _ = _fwd(
      x, w, key, forward, backward, rerotate, implementation, fmt, compute_dtype
    )
    return y

  matmul.defvjp(
    functools.partial(_fwd, compute_dtype=compute_dtype),
    functools.partial(_bwd, compute_dtype=compute_dtype),
  )
  return matmul


_QUARTET_MATMUL = {d: _make_quartet_matmul(d) for d in COMPUTE_DTYPES}
