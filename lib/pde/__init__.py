"""PDE toolkit and Hamiltonian Neural Solver (HNS).

Periodic grids and quadrature, derivative stencils, J operators, JAX data
generators (exact advection, KdV by ETDRK4, linear wave), lax.scan
integrators, the integral-kernel functional H_theta[u] with its autodiff
functional derivative, CNN baselines and rollout metrics.

References: Zhou & Barati Farimani, "Hamiltonian Neural PDE Solvers through
Functional Approximation", NeurIPS 2025 (arXiv:2505.13275).
"""

from lib.pde.derivatives import central_dx
from lib.pde.derivatives import central_dxx
from lib.pde.derivatives import first_derivative
from lib.pde.derivatives import second_derivative
from lib.pde.derivatives import smooth_dx
from lib.pde.derivatives import smooth_response
from lib.pde.derivatives import spectral_dx
from lib.pde.derivatives import spectral_dxx
from lib.pde.generators import SineParams
from lib.pde.generators import advection_trajectories
from lib.pde.generators import etdrk4_coefficients
from lib.pde.generators import kdv_etdrk4
from lib.pde.generators import kdv_soliton
from lib.pde.generators import kdv_trajectories
from lib.pde.generators import sample_sine_params
from lib.pde.generators import sine_series
from lib.pde.generators import wave_trajectories
from lib.pde.grid import Grid
from lib.pde.grid import integrate
from lib.pde.grid import interval_grid
from lib.pde.grid import periodic_grid
from lib.pde.grid import quadrature_weights
from lib.pde.hamiltonians import functional_derivative_label
from lib.pde.hamiltonians import hamiltonian
from lib.pde.hamiltonians import kdv_fd_hamiltonian
from lib.pde.hamiltonians import lowest_h_variation
from lib.pde.hns import IntegralKernelFunctional
from lib.pde.hns import KernelMLPFunctional
from lib.pde.hns import MLPFunctional
from lib.pde.hns import PeriodicCNN
from lib.pde.hns import functional_derivative
from lib.pde.hns import hamiltonian_vector_field
from lib.pde.integrators import ab2_rollout
from lib.pde.integrators import next_step_rollout
from lib.pde.integrators import richardson_dudt
from lib.pde.integrators import rk4_rollout
from lib.pde.integrators import rk4_step
from lib.pde.metrics import batch_correlation_time
from lib.pde.metrics import correlation_time
from lib.pde.metrics import hamiltonian_error
from lib.pde.metrics import pearson_correlation
from lib.pde.metrics import relative_l2
from lib.pde.metrics import rollout_error
from lib.pde.operators import canonical_j
from lib.pde.operators import dx_operator
from lib.pde.validation import check_initial_condition

__all__ = [
  "Grid",
  "IntegralKernelFunctional",
  "KernelMLPFunctional",
  "MLPFunctional",
  "PeriodicCNN",
  "SineParams",
  "ab2_rollout",
  "advection_trajectories",
  "batch_correlation_time",
  "canonical_j",
  "central_dx",
  "central_dxx",
  "check_initial_condition",
  "correlation_time",
  "dx_operator",
  "etdrk4_coefficients",
  "first_derivative",
  "functional_derivative",
  "functional_derivative_label",
  "hamiltonian",
  "kdv_fd_hamiltonian",
  "lowest_h_variation",
  "hamiltonian_error",
  "hamiltonian_vector_field",
  "integrate",
  "interval_grid",
  "kdv_etdrk4",
  "kdv_soliton",
  "kdv_trajectories",
  "next_step_rollout",
  "pearson_correlation",
  "periodic_grid",
  "quadrature_weights",
  "relative_l2",
  "richardson_dudt",
  "rk4_rollout",
  "rk4_step",
  "rollout_error",
  "sample_sine_params",
  "second_derivative",
  "sine_series",
  "smooth_dx",
  "smooth_response",
  "spectral_dx",
  "spectral_dxx",
  "wave_trajectories",
]
