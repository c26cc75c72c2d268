//! W10 `gp`: the negative log marginal likelihood of a Gaussian process with an RBF kernel at
//! n = 500 (Rasmussen & Williams, Algorithm 2.1): `cholesky`, `cho_solve`, the log-diagonal (f64).

use rune_ad::__private::workload_tensor;
use rune_ad::prelude::*;

use crate::harness::{NamedGrad, Program};

const N: usize = 500;

/// `0.5 yᵀK⁻¹y + 0.5 log det K + (n/2) log 2π`, θ = (log ℓ, log σ_f², log σ_n²).
#[differentiable]
pub fn gp_nll(
    theta: &Tensor<f64>,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
    #[nodiff] eye: &Tensor<f64>,
) -> Tensor<f64> {
    let ell2 = (theta.shrink(&[(0, 1)]).squeeze(0) * 2.0).exp();
    let sf2 = theta.shrink(&[(1, 2)]).squeeze(0).exp();
    let sn2 = theta.shrink(&[(2, 3)]).squeeze(0).exp();
    let d = x.expand_dims(1) - x.expand_dims(0);
    let k = sf2 * (d.square() * -0.5 / ell2).exp() + sn2 * eye;
    let l = k.cholesky();
    // cho_solve takes a matrix right-hand side: y as a column.
    let yc = y.expand_dims(1);
    let alpha = l.cho_solve(&yc);
    let n = x.len() as f64;
    (yc * alpha).sum() * 0.5 + l.diagonal().ln().sum() + 0.5 * n * (2.0 * std::f64::consts::PI).ln()
}

pub struct W10 {
    pub theta: Tensor<f64>,
    pub x: Tensor<f64>,
    pub y: Tensor<f64>,
    pub eye: Tensor<f64>,
}

impl Default for W10 {
    fn default() -> Self {
        let delta = workload_tensor::<f64>(&[3], 1003, -0.1, 0.1).to_vec();
        let theta = [0.0, 0.0, -2.0].iter().zip(&delta).map(|(a, d)| a + d);
        let x = workload_tensor::<f64>(&[N], 1001, 0.0, 10.0);
        let e = workload_tensor::<f64>(&[N], 1002, -0.1, 0.1).to_vec();
        let y = x
            .to_vec()
            .iter()
            .zip(&e)
            .map(|(x, e)| x.sin() + e)
            .collect();
        W10 {
            theta: Tensor::from_vec(theta.collect(), &[3]),
            x,
            y: Tensor::from_vec(y, &[N]),
            eye: Tensor::eye(N),
        }
    }
}

impl Program for W10 {
    const ID: &'static str = "w10";
    const NAME: &'static str = "gp";
    const DTYPE: &'static str = "f64";
    type Grads = Tensor<f64>;

    fn forward(&self) -> f64 {
        gp_nll(&self.theta, &self.x, &self.y, &self.eye).item()
    }

    fn value_and_grad(&self) -> (f64, Tensor<f64>) {
        let (v, g) = gp_nll_value_and_grad(&self.theta, &self.x, &self.y, &self.eye);
        (v.item(), g)
    }

    fn named(&self, g: &Tensor<f64>) -> Vec<NamedGrad> {
        vec![NamedGrad::new("theta", g)]
    }
}
