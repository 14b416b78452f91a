"""Quotient Bayesian learning rule (QBLR): the quotient natural gradient.

The univariate Student-t family t_nu(mu, sigma^2) is not an exponential
family, but it is the marginal of the Normal-Gamma family

  tau ~ Gamma(shape alpha, rate beta),  z | tau ~ N(mu, 1 / (kappa tau)),

which is a minimal, regular exponential family (the "lift"). The marginal is
z ~ t_nu(mu, sigma^2) with nu = 2 alpha and sigma^2 = beta / (alpha kappa).
The map pi: lambda -> xi = (mu, sigma^2, nu) is many-to-one; its fibres are the
orbits of (kappa, beta) -> (c kappa, c beta), c > 0, so the Student-t family
is the quotient Lambda / ~. Natural gradients are cheap in the lift
(F^-1 grad_lambda = grad_theta), and QBLR removes the *vertical* component of
the lifted natural gradient (the part that moves along a fibre) with an
F-orthogonal projection, then steps lambda <- lambda + beta g_perp.

One concern a module, as optax splits its transforms:

- `normal_wishart`: the paper's multivariate lift (S ~ W_d(nu, Psi),
  z | S ~ N(mu, (kappa S)^-1); a full-covariance Student-t marginal), its
  natural gradient without a Fisher solve, the horizontal projection, the
  domain test (for `guarded_step`) and the multivariate t; used as
  `qblr.normal_wishart.<name>` (its names parallel the Normal-Gamma ones).
- `normal_gamma`: the exponential-family lift (natural and mean parameters,
  log-partition, Fisher, lifted KL), the projection pi and the horizontal
  projection, the quotient metric (and the Theorem 2(ii) finding).
- `student_t`: the marginal family (log-density, entropy, reparameterised
  sampling, closed-form Fisher).
- `transform`: the QNG optax transformation with its domain-guarded step.
- `von`: the Gaussian BLR baseline (variational online Newton).
- `mle`: Student-t maximum likelihood: ECME, the reference solve, the
  compared methods (ECME, QNG, GD, Adam) and the iterations-to-gap record.
- `vi`: the variational posteriors, the ELBO of Bayesian logistic
  regression, the BBVI sticking-the-landing objective, the compared methods
  (QNG on the Normal-Wishart and the mean-field lifts, Gaussian BLR, BBVI)
  and the reported posterior metrics.

`from lib.optim import qblr` then `qblr.qng(...)`, `qblr.project(...)`: every
public name of the six other modules is re-exported here.

References:
  Lukashchuk, Tresor, Senoz, Nuijten, de Vries, "The Quotient Bayesian
  Learning Rule", NeurIPS 2025. Khan & Rue, "The Bayesian Learning Rule",
  JMLR 2023 (the Gaussian variational online Newton baseline).
"""

from lib.optim.qblr import normal_wishart
from lib.optim.qblr.mle import MLEMethod
from lib.optim.qblr.mle import Tracked
from lib.optim.qblr.mle import ecme_step
from lib.optim.qblr.mle import init_run
from lib.optim.qblr.mle import iterations_to_gap
from lib.optim.qblr.mle import log_from_xi
from lib.optim.qblr.mle import mean_loglik
from lib.optim.qblr.mle import mle_method
from lib.optim.qblr.mle import reference_mle
from lib.optim.qblr.mle import step_run
from lib.optim.qblr.mle import student_t_draws
from lib.optim.qblr.mle import xi_from_log
from lib.optim.qblr.normal_gamma import fisher
from lib.optim.qblr.normal_gamma import horizontal_project
from lib.optim.qblr.normal_gamma import in_domain
from lib.optim.qblr.normal_gamma import lifted_kl
from lib.optim.qblr.normal_gamma import log_partition
from lib.optim.qblr.normal_gamma import mean_params
from lib.optim.qblr.normal_gamma import natural_from_normal_gamma
from lib.optim.qblr.normal_gamma import natural_from_student_t
from lib.optim.qblr.normal_gamma import natural_gradient
from lib.optim.qblr.normal_gamma import normal_gamma_from_natural
from lib.optim.qblr.normal_gamma import pi_jacobian
from lib.optim.qblr.normal_gamma import project
from lib.optim.qblr.normal_gamma import quotient_metric
from lib.optim.qblr.normal_gamma import vertical
from lib.optim.qblr.student_t import NU_MAX
from lib.optim.qblr.student_t import sample_student_t
from lib.optim.qblr.student_t import student_t_entropy
from lib.optim.qblr.student_t import student_t_fisher
from lib.optim.qblr.student_t import student_t_logpdf
from lib.optim.qblr.transform import QNGLeafState
from lib.optim.qblr.transform import QNGState
from lib.optim.qblr.transform import check_domain
from lib.optim.qblr.transform import guarded_step
from lib.optim.qblr.transform import num_rejected
from lib.optim.qblr.transform import qng
from lib.optim.qblr.transform import rdog_step_size
from lib.optim.qblr.vi import LogJoint
from lib.optim.qblr.vi import NWState
from lib.optim.qblr.vi import Posterior
from lib.optim.qblr.vi import VIMethod
from lib.optim.qblr.vi import VIRun
from lib.optim.qblr.vi import elbo
from lib.optim.qblr.vi import gaussian_log_prior
from lib.optim.qblr.vi import gaussian_posterior
from lib.optim.qblr.vi import init_vi_run
from lib.optim.qblr.vi import logistic_log_joint
from lib.optim.qblr.vi import logistic_log_lik
from lib.optim.qblr.vi import map_logistic
from lib.optim.qblr.vi import multivariate_t_posterior
from lib.optim.qblr.vi import posterior_metrics
from lib.optim.qblr.vi import step_vi_run
from lib.optim.qblr.vi import stl_neg_elbo
from lib.optim.qblr.vi import student_t_posterior
from lib.optim.qblr.vi import vi_method
from lib.optim.qblr.von import von_expectations
from lib.optim.qblr.von import von_step
