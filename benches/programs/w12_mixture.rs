//! W12 `mixture`: the log-likelihood of 2,000 points under a mixture of 10 diagonal Gaussians in
//! 8 dimensions (f64).

use rune_ad::__private::workload_tensor;
use rune_ad::prelude::*;

use crate::harness::{NamedGrad, Program};

const N: usize = 2000;
const K: usize = 10;
const D: usize = 8;

fn log_2pi() -> f64 {
    (2.0 * std::f64::consts::PI).ln()
}

/// `Σ_n logsumexp_k (log π_k + log N(x_n | μ_k, diag(exp(2 log_s_k))))`.
#[differentiable]
pub fn mixture_loglik(
    mu: &Tensor<f64>,
    log_s: &Tensor<f64>,
    log_w: &Tensor<f64>,
    #[nodiff] x: &Tensor<f64>,
) -> Tensor<f64> {
    let log_pi = log_w.log_softmax(0);
    let zs = (x.expand_dims(1) - mu.expand_dims(0)) * (-log_s).exp().expand_dims(0);
    let dims = x.shape()[1] as f64;
    let comp = log_pi.expand_dims(0)
        - (zs.square() * 0.5 + log_s.expand_dims(0)).sum_axes(&[-1], false)
        - 0.5 * dims * log_2pi();
    comp.logsumexp_axes(&[1], false).sum()
}

pub struct W12 {
    pub mu: Tensor<f64>,
    pub log_s: Tensor<f64>,
    pub log_w: Tensor<f64>,
    pub x: Tensor<f64>,
}

impl Default for W12 {
    fn default() -> Self {
        W12 {
            mu: workload_tensor(&[K, D], 1202, -2.0, 2.0),
            log_s: workload_tensor(&[K, D], 1203, -0.5, 0.5),
            log_w: workload_tensor(&[K], 1204, -1.0, 1.0),
            x: workload_tensor(&[N, D], 1201, -3.0, 3.0),
        }
    }
}

impl Program for W12 {
    const ID: &'static str = "w12";
    const NAME: &'static str = "mixture";
    const DTYPE: &'static str = "f64";
    type Grads = (Tensor<f64>, Tensor<f64>, Tensor<f64>);

    fn forward(&self) -> f64 {
        mixture_loglik(&self.mu, &self.log_s, &self.log_w, &self.x).item()
    }

    fn value_and_grad(&self) -> (f64, Self::Grads) {
        let (v, g) = mixture_loglik_value_and_grad(&self.mu, &self.log_s, &self.log_w, &self.x);
        (v.item(), g)
    }

    fn named(&self, (mu, ls, lw): &Self::Grads) -> Vec<NamedGrad> {
        vec![
            NamedGrad::new("mu", mu),
            NamedGrad::new("log_s", ls),
            NamedGrad::new("log_w", lw),
        ]
    }
}

/// W12 by hand: per point, the ten component log-densities, their logsumexp and the
/// responsibilities `r_k`; then `∂/∂μ = Σ r z / s`, `∂/∂log s = Σ r (z² - 1)` and
/// `∂/∂log_w = Σ_n r - N π`.
pub struct MixtureHand {
    pub mu: Vec<f64>,
    pub log_s: Vec<f64>,
    pub log_w: Vec<f64>,
    pub x: Vec<f64>,
}

/// The per-component constants both paths start from: `1/s` and
/// `log π_k - Σ_d log s_kd - (D/2) log 2π`, with `π` the softmax of `log_w`.
struct Prepared {
    inv_s: Vec<f64>,
    base: Vec<f64>,
    pi: Vec<f64>,
}

impl MixtureHand {
    pub fn new(w: &W12) -> Self {
        MixtureHand {
            mu: w.mu.to_vec(),
            log_s: w.log_s.to_vec(),
            log_w: w.log_w.to_vec(),
            x: w.x.to_vec(),
        }
    }

    fn prepare(&self) -> Prepared {
        let top = self.log_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let lse = top + self.log_w.iter().map(|v| (v - top).exp()).sum::<f64>().ln();
        let base = (0..K)
            .map(|k| {
                let ls: f64 = self.log_s[k * D..(k + 1) * D].iter().sum();
                self.log_w[k] - lse - ls - 0.5 * D as f64 * log_2pi()
            })
            .collect();
        Prepared {
            inv_s: self.log_s.iter().map(|v| (-v).exp()).collect(),
            base,
            pi: self.log_w.iter().map(|v| (v - lse).exp()).collect(),
        }
    }

    /// The component log-densities of point `xn` into `comp`, and their logsumexp.
    fn components(&self, p: &Prepared, xn: &[f64], comp: &mut [f64; K]) -> f64 {
        for (k, c) in comp.iter_mut().enumerate() {
            let (mu, inv_s) = (&self.mu[k * D..(k + 1) * D], &p.inv_s[k * D..(k + 1) * D]);
            let mut q = 0.0;
            for ((x, m), is) in xn.iter().zip(mu).zip(inv_s) {
                let z = (x - m) * is;
                q += z * z;
            }
            *c = p.base[k] - 0.5 * q;
        }
        let top = comp.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        top + comp.iter().map(|c| (c - top).exp()).sum::<f64>().ln()
    }
}

impl Program for MixtureHand {
    const ID: &'static str = "w12";
    const NAME: &'static str = "mixture";
    const DTYPE: &'static str = "f64";
    type Grads = (Vec<f64>, Vec<f64>, Vec<f64>);

    fn forward(&self) -> f64 {
        let p = self.prepare();
        let mut comp = [0.0; K];
        self.x
            .chunks_exact(D)
            .map(|xn| self.components(&p, xn, &mut comp))
            .sum()
    }

    fn value_and_grad(&self) -> (f64, Self::Grads) {
        let p = self.prepare();
        let mut comp = [0.0; K];
        let (mut g_mu, mut g_ls, mut resp) = (vec![0.0; K * D], vec![0.0; K * D], [0.0; K]);
        let mut total = 0.0;
        for xn in self.x.chunks_exact(D) {
            let lse = self.components(&p, xn, &mut comp);
            total += lse;
            for k in 0..K {
                let r = (comp[k] - lse).exp();
                resp[k] += r;
                let row = k * D..(k + 1) * D;
                let (mu, inv_s) = (&self.mu[row.clone()], &p.inv_s[row.clone()]);
                let (gm, gl) = (&mut g_mu[row.clone()], &mut g_ls[row]);
                for d in 0..D {
                    let z = (xn[d] - mu[d]) * inv_s[d];
                    gm[d] += r * z * inv_s[d];
                    gl[d] += r * (z * z - 1.0);
                }
            }
        }
        let g_lw = (0..K).map(|k| resp[k] - N as f64 * p.pi[k]).collect();
        (total, (g_mu, g_ls, g_lw))
    }

    fn named(&self, (mu, ls, lw): &Self::Grads) -> Vec<NamedGrad> {
        let grad = |name: &str, shape: Vec<usize>, data: &Vec<f64>| NamedGrad {
            name: name.into(),
            shape,
            data: data.clone(),
        };
        vec![
            grad("mu", vec![K, D], mu),
            grad("log_s", vec![K, D], ls),
            grad("log_w", vec![K], lw),
        ]
    }
}
