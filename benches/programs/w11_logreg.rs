//! W11 `logreg`: the log-density of a Bayesian logistic regression, 10,000 × 50 design, a
//! standard normal prior on the weights (f64).

use rune_ad::__private::workload_tensor;
use rune_ad::prelude::*;

use crate::harness::{NamedGrad, Program};

const ROWS: usize = 10_000;
const COLS: usize = 50;

/// `sum(y z - softplus(z)) - 0.5 w·w` for `z = X w`, softplus in its stable form.
#[differentiable]
pub fn logreg_logp(
    w: &Tensor<f64>,
    #[nodiff] x: &Tensor<f64>,
    #[nodiff] y: &Tensor<f64>,
) -> Tensor<f64> {
    let z = x.matmul(w);
    let softplus = z.maximum(0.0) + (-z.abs()).exp().log1p();
    (y * &z - softplus).sum() - (w * w).sum() * 0.5
}

pub struct W11 {
    pub w: Tensor<f64>,
    pub x: Tensor<f64>,
    pub y: Tensor<f64>,
}

impl Default for W11 {
    fn default() -> Self {
        let y = workload_tensor::<f64>(&[ROWS], 1102, 0.0, 2.0)
            .to_vec()
            .into_iter()
            .map(f64::floor)
            .collect();
        W11 {
            w: workload_tensor(&[COLS], 1103, -0.5, 0.5),
            x: workload_tensor(&[ROWS, COLS], 1101, -1.0, 1.0),
            y: Tensor::from_vec(y, &[ROWS]),
        }
    }
}

impl Program for W11 {
    const ID: &'static str = "w11";
    const NAME: &'static str = "logreg";
    const DTYPE: &'static str = "f64";
    type Grads = Tensor<f64>;

    fn forward(&self) -> f64 {
        logreg_logp(&self.w, &self.x, &self.y).item()
    }

    fn value_and_grad(&self) -> (f64, Tensor<f64>) {
        let (v, g) = logreg_logp_value_and_grad(&self.w, &self.x, &self.y);
        (v.item(), g)
    }

    fn named(&self, g: &Tensor<f64>) -> Vec<NamedGrad> {
        vec![NamedGrad::new("w", g)]
    }
}

/// W11 by hand: one pass over the rows, `z_i = X_i·w`, and the gradient
/// `Σ_i (y_i - σ(z_i)) X_i - w`.
pub struct LogregHand {
    pub w: Vec<f64>,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

impl LogregHand {
    pub fn new(w: &W11) -> Self {
        LogregHand {
            w: w.w.to_vec(),
            x: w.x.to_vec(),
            y: w.y.to_vec(),
        }
    }

    fn prior(&self) -> f64 {
        -0.5 * self.w.iter().map(|v| v * v).sum::<f64>()
    }
}

/// A dot product in eight independent sums: one running sum is a chain of dependent adds that
/// the compiler may not reorder, and runs at a fraction of the multiply-add throughput.
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f64 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(a, b)| a * b)
        .sum();
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    acc.iter().sum::<f64>() + tail
}

impl Program for LogregHand {
    const ID: &'static str = "w11";
    const NAME: &'static str = "logreg";
    const DTYPE: &'static str = "f64";
    type Grads = Vec<f64>;

    fn forward(&self) -> f64 {
        let mut s = 0.0;
        for (row, &y) in self.x.chunks_exact(COLS).zip(&self.y) {
            let z = dot(row, &self.w);
            s += y * z - (z.max(0.0) + (-z.abs()).exp().ln_1p());
        }
        s + self.prior()
    }

    fn value_and_grad(&self) -> (f64, Vec<f64>) {
        let mut s = 0.0;
        let mut g: Vec<f64> = self.w.iter().map(|w| -w).collect();
        for (row, &y) in self.x.chunks_exact(COLS).zip(&self.y) {
            let z = dot(row, &self.w);
            let e = (-z.abs()).exp();
            s += y * z - (z.max(0.0) + e.ln_1p());
            let sigmoid = if z >= 0.0 {
                1.0 / (1.0 + e)
            } else {
                e / (1.0 + e)
            };
            let r = y - sigmoid;
            for (g, x) in g.iter_mut().zip(row) {
                *g += r * x;
            }
        }
        (s + self.prior(), g)
    }

    fn named(&self, g: &Vec<f64>) -> Vec<NamedGrad> {
        vec![NamedGrad {
            name: "w".into(),
            shape: vec![COLS],
            data: g.clone(),
        }]
    }
}
