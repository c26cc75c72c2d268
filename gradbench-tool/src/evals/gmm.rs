//! `gmm`: the log-posterior of a Gaussian mixture model with a Wishart prior on each
//! component's precision, parameterised by the log-diagonal `q` and the packed strictly lower
//! triangle `l` of the precision's Cholesky-like factor `Q_k` (`Σ_k⁻¹ = Q_kᵀ Q_k`).
use std::f64::consts::PI;

use rune_ad::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use super::{decode, matrix, matrix_json, timed, unknown_function, vector_json, Outcome};
use crate::timing::Runs;

/// The constants of the Wishart prior.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Wishart {
    /// The precision γ.
    pub gamma: f64,
    /// The extra degrees of freedom m.
    pub m: usize,
}

/// `ln Γ(a)` for `a` a positive multiple of ½, exactly from `ln Γ(1) = 0`, `ln Γ(½) = ½ ln π`
/// and `ln Γ(a + 1) = ln Γ(a) + ln a`.
fn ln_gamma_half_integer(a: f64) -> f64 {
    let (mut value, mut b) = if a.fract() == 0.0 {
        (0.0, 1.0)
    } else {
        (0.5 * PI.ln(), 0.5)
    };
    while b < a {
        value += b.ln();
        b += 1.0;
    }
    value
}

/// The constant term of the log-posterior: `−N·D·½·ln 2π + K·C`, with the Wishart
/// normaliser `C = n_w·D·(ln γ − ½ ln 2) − ln Γ_D(n_w / 2)`, `n_w = D + m + 1`.
pub fn constant_term(n: usize, d: usize, k: usize, wishart: Wishart) -> f64 {
    let (nf, df, kf) = (n as f64, d as f64, k as f64);
    let n_w = (d + wishart.m + 1) as f64;
    let ln_multigamma = df * (df - 1.0) / 4.0 * PI.ln()
        + (1..=d)
            .map(|j| ln_gamma_half_integer(n_w / 2.0 + (1.0 - j as f64) / 2.0))
            .sum::<f64>();
    let c = n_w * df * (wishart.gamma.ln() - 0.5 * 2f64.ln()) - ln_multigamma;
    -nf * df * 0.5 * (2.0 * PI).ln() + kf * c
}

/// Where each entry of the transposed factors `Q_kᵀ` (`[K, D·D]`, row-major per component)
/// is read from in `[0, exp(q_k), l_k]` (a row of `1 + D + D(D−1)/2` values): `Q_kᵀ[c][r]`
/// is `Q_k[r][c]`, i.e. `exp(q_k[r])` on the diagonal, `l_k[idx(r, c)]` for `r > c` with
/// `l` packed column by column, and the leading 0 above the diagonal.
pub fn transposed_factor_indices(k: usize, d: usize) -> Tensor<i64> {
    let mut row = vec![0i64; d * d];
    for c in 0..d {
        row[c * d + c] = (1 + c) as i64;
        for r in c + 1..d {
            let packed = c * (2 * d - c - 1) / 2 + (r - c - 1);
            row[c * d + r] = (1 + d + packed) as i64;
        }
    }
    let all: Vec<i64> = (0..k).flat_map(|_| row.iter().copied()).collect();
    Tensor::from_vec(all, &[k, d * d])
}

/// The GMM log-posterior (docs/GRADBENCH.md §7.3), maximised, not minimised:
///
/// ```text
/// β[k][i]  = α_k + Σ_j q[k][j] − ½ ‖Q_k (x_i − μ_k)‖²
/// loglik   = Σ_i LSE_k β[k][i] − N · LSE(α)
/// logprior = − Σ_k [ ½ γ² (‖exp(q_k)‖² + ‖l_k‖²) − m Σ_j q[k][j] ]
/// ```
///
/// plus [`constant_term`]. The residuals `(x_i − μ_k) Q_kᵀ` of each component come from one
/// product in homogeneous coordinates, `[x_i, 1] · [Q_kᵀ; −μ_k Q_kᵀ]` (`[N, D+1] × [D+1, D]`),
/// in a loop over the components: no `[K, N, D]` difference or product is formed, only each
/// component's `[N, D]` residuals and the `[K, N]` squared norms, and since `x` is a constant
/// the backward pass of each product is a single `[x, 1]ᵀ ḡ`. The components' factors and
/// means are read with `shrink`, whose gradient the backward pass adds into its component's
/// rows in place. docs/benchmarks.md compares it with one batched product of all components.
#[differentiable]
pub fn objective(
    alpha: &Tensor<f64>,
    mu: &Tensor<f64>,
    q: &Tensor<f64>,
    l: &Tensor<f64>,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] wishart: Wishart,
) -> Tensor<f64> {
    let n = x.shape()[0];
    let d = x.shape()[1];
    let k = alpha.len();
    let diagonal = q.exp();
    let factors_t = concat(&[&diagonal, l], 1)
        .pad(&[(0, 0), (1, 0)], 0.0)
        .gather(1, &transposed_factor_indices(k, d))
        .reshape(&[k, d, d]);
    let x_one = x.pad(&[(0, 0), (0, 1)], 1.0);
    let mut squared_norms = Vec::with_capacity(k);
    for j in 0..k {
        let factor_t = factors_t
            .shrink(&[(j, j + 1), (0, d), (0, d)])
            .reshape(&[d, d]);
        let shift = -mu.shrink(&[(j, j + 1), (0, d)]).matmul(&factor_t);
        let z = x_one.matmul(&concat(&[&factor_t, &shift], 0));
        squared_norms.push((&z * &z).sum_axes(&[1], false));
    }
    let beta = (alpha + q.sum_axes(&[1], false)).expand_dims(1) - stack(&squared_norms, 0) * 0.5;
    let loglik =
        beta.logsumexp_axes(&[0], false).sum() - alpha.logsumexp_axes(&[0], false) * n as f64;
    let frobenius = (&diagonal * &diagonal).sum() + (l * l).sum();
    let logprior = q.sum() * wishart.m as f64 - frobenius * (0.5 * wishart.gamma * wishart.gamma);
    loglik + logprior + constant_term(n, d, k, wishart)
}

/// A decoded `gmm` input.
#[derive(Clone, Debug)]
pub struct Problem {
    /// Weights α, `[K]`.
    pub alpha: Tensor<f64>,
    /// Means, `[K, D]`.
    pub mu: Tensor<f64>,
    /// Log-diagonals of the factors, `[K, D]`.
    pub q: Tensor<f64>,
    /// Packed strict lower triangles of the factors, `[K, D(D−1)/2]`.
    pub l: Tensor<f64>,
    /// Data points, `[N, D]`.
    pub x: Tensor<f64>,
    /// The prior's constants.
    pub wishart: Wishart,
}

#[derive(Deserialize)]
struct Input {
    d: usize,
    k: usize,
    n: usize,
    x: Vec<Vec<f64>>,
    m: usize,
    gamma: f64,
    alpha: Vec<f64>,
    mu: Vec<Vec<f64>>,
    q: Vec<Vec<f64>>,
    l: Vec<Vec<f64>>,
    #[serde(flatten)]
    runs: Runs,
}

/// Decodes a `gmm` input, checking every array against `d`, `k` and `n`.
pub fn prepare(input: &Value) -> Result<(Problem, Runs), String> {
    let i: Input = decode("gmm", input)?;
    let (d, k, n) = (i.d, i.k, i.n);
    let count = |name: &str, len: usize, expected: usize| {
        if len == expected {
            Ok(())
        } else {
            Err(format!("gmm: {name} has {len} rows, expected {expected}"))
        }
    };
    count("x", i.x.len(), n)?;
    count("alpha", i.alpha.len(), k)?;
    count("mu", i.mu.len(), k)?;
    count("q", i.q.len(), k)?;
    count("l", i.l.len(), k)?;
    if d == 0 || k == 0 || n == 0 {
        return Err(format!("gmm: needs d, k, n ≥ 1, got {d}, {k}, {n}"));
    }
    let problem = Problem {
        alpha: Tensor::from_vec(i.alpha, &[k]),
        mu: matrix("gmm: mu", i.mu, d)?,
        q: matrix("gmm: q", i.q, d)?,
        l: matrix("gmm: l", i.l, d * (d - 1) / 2)?,
        x: matrix("gmm: x", i.x, d)?,
        wishart: Wishart {
            gamma: i.gamma,
            m: i.m,
        },
    };
    Ok((problem, i.runs))
}

/// `objective` on a decoded input.
pub fn primal(p: &Problem) -> f64 {
    objective(&p.alpha, &p.mu, &p.q, &p.l, &p.x, p.wishart).item()
}

/// The gradient with respect to `(alpha, mu, q, l)`, generated by the macro.
pub fn jacobian(p: &Problem) -> (Tensor<f64>, Tensor<f64>, Tensor<f64>, Tensor<f64>) {
    objective_grad(&p.alpha, &p.mu, &p.q, &p.l, &p.x, p.wishart)
}

/// Runs `objective` or `jacobian` on a `gmm` input.
pub fn evaluate(function: &str, input: &Value) -> Result<Outcome, String> {
    let (problem, runs) = prepare(input)?;
    match function {
        "objective" => Ok(timed(runs, &problem, primal, Value::from)),
        "jacobian" => Ok(timed(runs, &problem, jacobian, |(alpha, mu, q, l)| {
            serde_json::json!({
                "alpha": vector_json(&alpha),
                "mu": matrix_json(&mu),
                "q": matrix_json(&q),
                "l": matrix_json(&l),
            })
        })),
        _ => Err(unknown_function("gmm", function)),
    }
}
