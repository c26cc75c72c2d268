//! W9 `nbody`: the softened gravitational potential of 512 bodies, pairwise differences by
//! broadcasting (f64).

use rune_ad::__private::workload_tensor;
use rune_ad::prelude::*;

use crate::harness::{NamedGrad, Program};

const N: usize = 512;
const EPS2: f64 = 1e-4;

/// `-0.5 Σ m_i m_j offdiag_ij / sqrt(|x_i - x_j|² + ε²)`.
#[differentiable]
pub fn nbody_energy(
    x: &Tensor<f64>,
    #[nodiff] m: &Tensor<f64>,
    #[nodiff] offdiag: &Tensor<f64>,
) -> Tensor<f64> {
    let diff = x.expand_dims(1) - x.expand_dims(0);
    let r2 = diff.square().sum_axes(&[-1], false) + EPS2;
    let mm = m.expand_dims(1) * m.expand_dims(0) * offdiag;
    (mm / r2.sqrt()).sum() * -0.5
}

pub struct W9 {
    pub x: Tensor<f64>,
    pub m: Tensor<f64>,
    pub offdiag: Tensor<f64>,
}

impl Default for W9 {
    fn default() -> Self {
        W9 {
            x: workload_tensor(&[N, 3], 901, -1.0, 1.0),
            m: workload_tensor(&[N], 902, 0.5, 1.5),
            offdiag: Tensor::<f64>::ones(&[N, N]) - Tensor::eye(N),
        }
    }
}

impl Program for W9 {
    const ID: &'static str = "w9";
    const NAME: &'static str = "nbody";
    const DTYPE: &'static str = "f64";
    type Grads = Tensor<f64>;

    fn forward(&self) -> f64 {
        nbody_energy(&self.x, &self.m, &self.offdiag).item()
    }

    fn value_and_grad(&self) -> (f64, Tensor<f64>) {
        let (v, g) = nbody_energy_value_and_grad(&self.x, &self.m, &self.offdiag);
        (v.item(), g)
    }

    fn named(&self, g: &Tensor<f64>) -> Vec<NamedGrad> {
        vec![NamedGrad::new("X", g)]
    }
}

/// W9 by hand: one pass over the pairs `i < j`, the energy and both bodies' gradients at once.
pub struct NbodyHand {
    pub x: Vec<f64>,
    pub m: Vec<f64>,
}

impl NbodyHand {
    pub fn new(w: &W9) -> Self {
        NbodyHand {
            x: w.x.to_vec(),
            m: w.m.to_vec(),
        }
    }

    /// The energy, and its gradient into `grad` when there is one.
    fn pairs(&self, mut grad: Option<&mut [f64]>) -> f64 {
        let (x, m) = (&self.x, &self.m);
        let mut e = 0.0;
        for i in 0..N {
            let xi = [x[3 * i], x[3 * i + 1], x[3 * i + 2]];
            let mut gi = [0.0; 3];
            for j in i + 1..N {
                let d = [xi[0] - x[3 * j], xi[1] - x[3 * j + 1], xi[2] - x[3 * j + 2]];
                let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + EPS2;
                let inv = 1.0 / r2.sqrt();
                let mm = m[i] * m[j];
                e -= mm * inv;
                if let Some(g) = grad.as_deref_mut() {
                    // d/dx_i of -mm r2^(-1/2) = mm r2^(-3/2) d; x_j gets the opposite.
                    let s = mm * inv * inv * inv;
                    for k in 0..3 {
                        gi[k] += s * d[k];
                        g[3 * j + k] -= s * d[k];
                    }
                }
            }
            if let Some(g) = grad.as_deref_mut() {
                for k in 0..3 {
                    g[3 * i + k] += gi[k];
                }
            }
        }
        e
    }
}

impl Program for NbodyHand {
    const ID: &'static str = "w9";
    const NAME: &'static str = "nbody";
    const DTYPE: &'static str = "f64";
    type Grads = Vec<f64>;

    fn forward(&self) -> f64 {
        self.pairs(None)
    }

    fn value_and_grad(&self) -> (f64, Vec<f64>) {
        let mut g = vec![0.0; 3 * N];
        let e = self.pairs(Some(&mut g));
        (e, g)
    }

    fn named(&self, g: &Vec<f64>) -> Vec<NamedGrad> {
        vec![NamedGrad {
            name: "X".into(),
            shape: vec![N, 3],
            data: g.clone(),
        }]
    }
}
