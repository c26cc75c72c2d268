//! `ode`: `s` classical Runge–Kutta-4 steps to `t = 2` of the linear chain `y₀' = x₀`,
//! `yᵢ' = xᵢ yᵢ₋₁` from `y(0) = 0`; the gradient is that of the last component with respect
//! to `x`, through the RK4 loop.
use rune_ad::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use super::{decode, timed, unknown_function, vector_json, Outcome};
use crate::timing::Runs;

/// The number of elements of an `n`-vector that a shift down by `k` keeps.
fn kept(n: usize, k: usize) -> usize {
    n.saturating_sub(k)
}

/// One classical RK4 step of size `h` from `y`, for the vector field `f(y) = x · S(y)`, where
/// `S` shifts down by one with a 1 in front: `f(y)₀ = x₀`, `f(y)ᵢ = xᵢ yᵢ₋₁`.
///
/// The stages are `p₁ = S(y)`, `p₂ = S(y + x p₁ h/2)`, `p₃ = S(y + x p₂ h/2)` and
/// `p₄ = S(y + x p₃ h)`, and `y' = y + x (p₁ + 2p₂ + 2p₃ + p₄) h/6`. A shift commutes with
/// elementwise arithmetic but for the element it fills, so each stage is written over the
/// shifts of `y` and `x` themselves: `Yₖ`, `y` shifted down by `k` with ones in front, and
/// `Xₖ`, `x` shifted with zeros, which make every filled element come out as the stage's 1
/// (`S(y + x p h) = Y₁ + X₁ S(p) h`). The step is then one elementwise expression of `y`,
/// `x` and their shifts, each a `shrink` and a `pad` of the first axis, which a fused region
/// reads in place: one pass over `n` forward, and one backward that adds every shift's
/// cotangent into the adjoint of `y` or `x` at its offset (`rune_runtime`'s
/// `fused_vjp_routed`). Written stage by stage through a `shifted` function, each stage was a
/// region of its own, four passes forward and four backward with the shifts between them:
/// measured on one core, the gradient took 1.45 times as long at `n = 1000`, `s = 100`
/// (1.50 against 1.04 ms) and 1.45 at `n = 10⁵`, `s = 10` (docs/benchmarks.md, "GradBench").
#[differentiable]
pub fn rk4_step(y: &Tensor<f64>, x: &Tensor<f64>, #[nodiff] h: f64) -> Tensor<f64> {
    let n = y.len();
    let (k1, k2, k3, k4) = (kept(n, 1), kept(n, 2), kept(n, 3), kept(n, 4));
    let y1 = y.shrink(&[(0, k1)]).pad(&[(n - k1, 0)], 1.0);
    let y2 = y.shrink(&[(0, k2)]).pad(&[(n - k2, 0)], 1.0);
    let y3 = y.shrink(&[(0, k3)]).pad(&[(n - k3, 0)], 1.0);
    let y4 = y.shrink(&[(0, k4)]).pad(&[(n - k4, 0)], 1.0);
    let x1 = x.shrink(&[(0, k1)]).pad(&[(n - k1, 0)], 0.0);
    let x2 = x.shrink(&[(0, k2)]).pad(&[(n - k2, 0)], 0.0);
    let x3 = x.shrink(&[(0, k3)]).pad(&[(n - k3, 0)], 0.0);
    // S(p₂), S(S(p₂)) and S(p₃): stages read one and two elements further down.
    let sp2 = &y2 + &x2 * &y3 * (h / 2.0);
    let ssp2 = &y3 + &x3 * &y4 * (h / 2.0);
    let sp3 = &y2 + &x2 * ssp2 * (h / 2.0);
    let p2 = &y1 + &x1 * &y2 * (h / 2.0);
    let p3 = &y1 + &x1 * sp2 * (h / 2.0);
    let p4 = &y1 + &x1 * sp3 * h;
    y + x * (y1 + p2 * 2.0 + p3 * 2.0 + p4) * (h / 6.0)
}

/// The state after `s` RK4 steps of size `h = 2/s` from `y = 0`.
///
/// The backward pass keeps each step's input `y`, 8 bytes an element and step (its shifts are
/// `y` read in place; below 256 elements they are copies), 80 MB at `n = 10⁵`, `s = 100`.
/// Checkpointing the steps (`#[differentiable(checkpoint)]`, which keeps the same `y` and
/// reruns the step) now only costs the rerun: measured on one core there, 89–98 ms a
/// gradient against 73–76 ms, and 237 ms against 75 for a process's first call. When each
/// step kept its four stages (38 bytes an element) the steps beyond `n · s = 2²⁰` were
/// checkpoints, where the first call paid 0.8 s of page faults.
#[differentiable]
pub fn solve(x: &Tensor<f64>, #[nodiff] s: usize) -> Tensor<f64> {
    let h = 2.0 / s as f64;
    let mut y = Tensor::zeros(x.shape());
    for _ in 0..s {
        y = rk4_step(&y, x, h);
    }
    y
}

/// The last component `y_{n−1}` of [`solve`]: the function `gradient` differentiates.
#[differentiable]
pub fn last_component(x: &Tensor<f64>, #[nodiff] s: usize) -> Tensor<f64> {
    let n = x.len();
    solve(x, s).shrink(&[(n - 1, n)]).sum()
}

#[derive(Deserialize)]
struct Input {
    x: Vec<f64>,
    s: usize,
    #[serde(flatten)]
    runs: Runs,
}

/// Decodes an `ode` input into `x`, `s` and its timing controls.
pub fn prepare(input: &Value) -> Result<(Tensor<f64>, usize, Runs), String> {
    let Input { x, s, runs } = decode("ode", input)?;
    if x.is_empty() || s == 0 {
        return Err(format!(
            "ode: needs n ≥ 1 and s ≥ 1, got n = {} and s = {s}",
            x.len()
        ));
    }
    let n = x.len();
    Ok((Tensor::from_vec(x, &[n]), s, runs))
}

/// Runs `primal` or `gradient` on an `ode` input.
pub fn evaluate(function: &str, input: &Value) -> Result<Outcome, String> {
    let (x, s, runs) = prepare(input)?;
    match function {
        "primal" => Ok(timed(runs, &x, |x| solve(x, s), |y| vector_json(&y))),
        "gradient" => Ok(timed(
            runs,
            &x,
            |x| last_component_grad(x, s),
            |g| vector_json(&g),
        )),
        _ => Err(unknown_function("ode", function)),
    }
}
