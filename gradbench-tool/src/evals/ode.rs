//! `ode`: `s` classical Runge–Kutta-4 steps to `t = 2` of the linear chain `y₀' = x₀`,
//! `yᵢ' = xᵢ yᵢ₋₁` from `y(0) = 0`; the gradient is that of the last component with respect
//! to `x`, through the RK4 loop.
use rune_ad::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use super::{decode, timed, unknown_function, vector_json, Outcome};
use crate::timing::Runs;

/// `y` shifted down by one with a 1 in front: the vector field is `f(y) = x · shifted(y)`,
/// `f(y)₀ = x₀`, `f(y)ᵢ = xᵢ yᵢ₋₁`.
#[differentiable]
pub fn shifted(y: &Tensor<f64>) -> Tensor<f64> {
    let n = y.len();
    y.shrink(&[(0, n - 1)]).pad(&[(1, 0)], 1.0)
}

/// One classical RK4 step of size `h` from `y`, for the vector field `f(y) = x · shifted(y)`.
///
/// Each stage's `f` is written out, `x · shifted(..)`, so that its product with `x` fuses into
/// the elementwise code that reads it (the next stage's state, and the step's combination,
/// which recomputes the four products) instead of taking a pass of its own: measured on one
/// core against a step calling a `vector_field` function, 12–20% off the primal and 4–12% off
/// the gradient (n = 10³ to 10⁵).
#[differentiable]
pub fn rk4_step(y: &Tensor<f64>, x: &Tensor<f64>, #[nodiff] h: f64) -> Tensor<f64> {
    let p1 = shifted(y);
    let p2 = shifted(&(y + x * &p1 * (h / 2.0)));
    let p3 = shifted(&(y + x * &p2 * (h / 2.0)));
    let p4 = shifted(&(y + x * &p3 * h));
    y + x * (p1 + p2 * 2.0 + p3 * 2.0 + p4) * (h / 6.0)
}

/// [`rk4_step`] as a checkpoint: the backward pass of [`solve`] keeps only the step's input
/// `y` and reruns the step, where [`rk4_step`]'s keeps every stage's values.
#[differentiable(checkpoint)]
pub fn rk4_step_checkpointed(y: &Tensor<f64>, x: &Tensor<f64>, #[nodiff] h: f64) -> Tensor<f64> {
    rk4_step(y, x, h)
}

/// The most `n · s` (elements times steps) whose stages the backward pass of [`solve`] keeps;
/// beyond it the steps are checkpoints.
///
/// Kept, the stages take about 38 bytes an element and step (380 MB at `n = 10⁵`, `s = 100`),
/// which the first call must fault in (0.83 s there, against 0.16 s for a later call), and
/// rerunning each step costs a quarter of the gradient: measured on one core, the gradient at
/// `n = 10⁵` takes 1.25 ms with the stages kept against 1.75 ms with checkpoints at `s = 1`,
/// 15.5 against 18 ms at `s = 10` (docs/benchmarks.md, "GradBench").
const KEPT_STEPS_ELEMENTS: usize = 1 << 20;

/// The state after `s` RK4 steps of size `h = 2/s` from `y = 0`.
#[differentiable]
pub fn solve(x: &Tensor<f64>, #[nodiff] s: usize) -> Tensor<f64> {
    let h = 2.0 / s as f64;
    let checkpoints = x.len() * s > KEPT_STEPS_ELEMENTS;
    let mut y = Tensor::zeros(x.shape());
    for _ in 0..s {
        y = if checkpoints {
            rk4_step_checkpointed(&y, x, h)
        } else {
            rk4_step(&y, x, h)
        };
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
