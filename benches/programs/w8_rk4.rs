//! W8 `rk4`: Lotka–Volterra integrated with 1,000 RK4 steps of 0.01, fitted to 100 noisy
//! observations (f64). The state is a 2-element tensor read by slicing and rebuilt with `stack`,
//! as docs/PROGRAMS.md writes it: per-op cost on tiny tensors is what this workload measures.

use rune_ad::__private::workload_tensor;
use rune_ad::prelude::*;

use crate::harness::{NamedGrad, Program};

const STEPS: usize = 1000;
const EVERY: usize = 10;
const DT: f64 = 0.01;
const H2: f64 = DT / 2.0;
const H6: f64 = DT / 6.0;
const P_STAR: [f64; 4] = [1.5, 1.0, 1.0, 3.0];

/// `sum((obs - target)^2)` over the states after steps 10, 20, …, 1000.
#[differentiable]
pub fn rk4_loss(p: &Tensor<f64>, u0: &Tensor<f64>, #[nodiff] target: &Tensor<f64>) -> Tensor<f64> {
    // `p[0]` … `p[3]`: the op table has no element indexing; a one-element slice squeezed to 0-d.
    let a = p.shrink(&[(0, 1)]).squeeze(0);
    let b = p.shrink(&[(1, 2)]).squeeze(0);
    let c = p.shrink(&[(2, 3)]).squeeze(0);
    let d = p.shrink(&[(3, 4)]).squeeze(0);
    let f = |u: &Tensor<f64>| {
        let x = u.shrink(&[(0, 1)]).squeeze(0);
        let y = u.shrink(&[(1, 2)]).squeeze(0);
        let dx = &a * &x - &b * &x * &y;
        let dy = &c * &x * &y - &d * &y;
        stack(&[&dx, &dy], 0)
    };
    let mut u = u0.clone();
    let mut obs = Vec::new();
    for n in 1..=STEPS {
        let k1 = f(&u);
        let k2 = f(&(&u + &k1 * H2));
        let k3 = f(&(&u + &k2 * H2));
        let k4 = f(&(&u + &k3 * DT));
        u = &u + (k1 + k2 * 2.0 + k3 * 2.0 + k4) * H6;
        if n % EVERY == 0 {
            obs.push(u.clone());
        }
    }
    (stack(&obs, 0) - target).square().sum()
}

/// The right-hand side on numbers, in the workload's operation order.
fn lv(p: &[f64; 4], u: [f64; 2]) -> [f64; 2] {
    let [a, b, c, d] = *p;
    let [x, y] = u;
    [a * x - b * x * y, c * x * y - d * y]
}

fn axpy(u: [f64; 2], h: f64, k: [f64; 2]) -> [f64; 2] {
    [u[0] + h * k[0], u[1] + h * k[1]]
}

/// One RK4 step on numbers; also the integrator that makes the target (`traj*`).
fn step(p: &[f64; 4], u: [f64; 2]) -> [f64; 2] {
    let k1 = lv(p, u);
    let k2 = lv(p, axpy(u, H2, k1));
    let k3 = lv(p, axpy(u, H2, k2));
    let k4 = lv(p, axpy(u, DT, k3));
    let s = |i: usize| k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i];
    axpy(u, H6, [s(0), s(1)])
}

pub struct W8 {
    pub p: Tensor<f64>,
    pub u0: Tensor<f64>,
    pub target: Tensor<f64>,
}

impl Default for W8 {
    fn default() -> Self {
        let delta = workload_tensor::<f64>(&[4], 801, -0.05, 0.05).to_vec();
        let p: Vec<f64> = P_STAR.iter().zip(&delta).map(|(a, d)| a + d).collect();
        let noise = workload_tensor::<f64>(&[STEPS / EVERY, 2], 802, -0.05, 0.05).to_vec();
        let mut u = [1.0, 1.0];
        let mut target = Vec::with_capacity(2 * STEPS / EVERY);
        for n in 1..=STEPS {
            u = step(&P_STAR, u);
            if n % EVERY == 0 {
                target.extend(u);
            }
        }
        for (t, e) in target.iter_mut().zip(&noise) {
            *t += e;
        }
        W8 {
            p: Tensor::from_vec(p, &[4]),
            u0: Tensor::from_vec(vec![1.0, 1.0], &[2]),
            target: Tensor::from_vec(target, &[STEPS / EVERY, 2]),
        }
    }
}

impl Program for W8 {
    const ID: &'static str = "w8";
    const NAME: &'static str = "rk4";
    const DTYPE: &'static str = "f64";
    type Grads = (Tensor<f64>, Tensor<f64>);

    fn forward(&self) -> f64 {
        rk4_loss(&self.p, &self.u0, &self.target).item()
    }

    fn value_and_grad(&self) -> (f64, Self::Grads) {
        let (v, g) = rk4_loss_value_and_grad(&self.p, &self.u0, &self.target);
        (v.item(), g)
    }

    fn named(&self, (gp, gu): &Self::Grads) -> Vec<NamedGrad> {
        vec![NamedGrad::new("p", gp), NamedGrad::new("u0", gu)]
    }
}

/// W8 by hand on `f64` numbers: the forward keeps the four stage inputs of every step, the
/// backward runs the steps in reverse through the RK4 formulas and the Jacobians of `lv`.
pub struct Rk4Hand {
    pub p: [f64; 4],
    pub u0: [f64; 2],
    pub target: Vec<f64>,
}

impl Rk4Hand {
    pub fn new(w: &W8) -> Self {
        let p = w.p.to_vec();
        let u0 = w.u0.to_vec();
        Rk4Hand {
            p: [p[0], p[1], p[2], p[3]],
            u0: [u0[0], u0[1]],
            target: w.target.to_vec(),
        }
    }

    fn residual(&self, n: usize, u: [f64; 2]) -> [f64; 2] {
        let k = n / EVERY - 1;
        [u[0] - self.target[2 * k], u[1] - self.target[2 * k + 1]]
    }

    /// `(Jᵤᵀ g, J_pᵀ g)` of `lv` at `u`.
    fn lv_vjp(&self, u: [f64; 2], g: [f64; 2]) -> ([f64; 2], [f64; 4]) {
        let [a, b, c, d] = self.p;
        let [x, y] = u;
        let du = [
            (a - b * y) * g[0] + c * y * g[1],
            -b * x * g[0] + (c * x - d) * g[1],
        ];
        let dp = [x * g[0], -x * y * g[0], x * y * g[1], -y * g[1]];
        (du, dp)
    }
}

impl Program for Rk4Hand {
    const ID: &'static str = "w8";
    const NAME: &'static str = "rk4";
    const DTYPE: &'static str = "f64";
    type Grads = ([f64; 4], [f64; 2]);

    fn forward(&self) -> f64 {
        let mut u = self.u0;
        let mut loss = 0.0;
        for n in 1..=STEPS {
            u = step(&self.p, u);
            if n % EVERY == 0 {
                let r = self.residual(n, u);
                loss += r[0] * r[0] + r[1] * r[1];
            }
        }
        loss
    }

    fn value_and_grad(&self) -> (f64, Self::Grads) {
        let p = &self.p;
        // stages[n] = (u, u + h/2 k1, u + h/2 k2, u + h k3) of step n + 1.
        let mut stages = Vec::with_capacity(STEPS);
        let mut u = self.u0;
        let mut loss = 0.0;
        let mut resid = Vec::with_capacity(STEPS / EVERY);
        for n in 1..=STEPS {
            let k1 = lv(p, u);
            let u1 = axpy(u, H2, k1);
            let k2 = lv(p, u1);
            let u2 = axpy(u, H2, k2);
            let k3 = lv(p, u2);
            let u3 = axpy(u, DT, k3);
            let k4 = lv(p, u3);
            stages.push([u, u1, u2, u3]);
            let s = |i: usize| k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i];
            u = axpy(u, H6, [s(0), s(1)]);
            if n % EVERY == 0 {
                let r = self.residual(n, u);
                loss += r[0] * r[0] + r[1] * r[1];
                resid.push(r);
            }
        }
        let mut gp = [0.0; 4];
        let mut g = [0.0; 2];
        let mut add_p = |dp: [f64; 4]| {
            for (a, b) in gp.iter_mut().zip(dp) {
                *a += b;
            }
        };
        for n in (1..=STEPS).rev() {
            if n % EVERY == 0 {
                let r = resid[n / EVERY - 1];
                g = [g[0] + 2.0 * r[0], g[1] + 2.0 * r[1]];
            }
            let [u, u1, u2, u3] = stages[n - 1];
            // u_next = u + h/6 (k1 + 2 k2 + 2 k3 + k4).
            let gk4 = [H6 * g[0], H6 * g[1]];
            let mut gk1 = gk4;
            let mut gk3 = [2.0 * H6 * g[0], 2.0 * H6 * g[1]];
            let mut gk2 = gk3;
            let mut gu = g;
            let (gu3, dp) = self.lv_vjp(u3, gk4);
            add_p(dp);
            gu = axpy(gu, 1.0, gu3);
            gk3 = axpy(gk3, DT, gu3);
            let (gu2, dp) = self.lv_vjp(u2, gk3);
            add_p(dp);
            gu = axpy(gu, 1.0, gu2);
            gk2 = axpy(gk2, H2, gu2);
            let (gu1, dp) = self.lv_vjp(u1, gk2);
            add_p(dp);
            gu = axpy(gu, 1.0, gu1);
            gk1 = axpy(gk1, H2, gu1);
            let (gu0, dp) = self.lv_vjp(u, gk1);
            add_p(dp);
            g = axpy(gu, 1.0, gu0);
        }
        (loss, (gp, g))
    }

    fn named(&self, (gp, gu): &Self::Grads) -> Vec<NamedGrad> {
        vec![
            NamedGrad {
                name: "p".into(),
                shape: vec![4],
                data: gp.to_vec(),
            },
            NamedGrad {
                name: "u0".into(),
                shape: vec![2],
                data: gu.to_vec(),
            },
        ]
    }
}
