//! `particle`: a charged particle pushed by the field of two fixed charges (naive Euler until it
//! crosses the x-axis), and the control `w` (the height of one charge) that makes it cross at the
//! origin, found by gradient descent. The force is the potential's gradient, taken inside the
//! function the descent differentiates: nested derivatives, in the four orders GradBench asks
//! for (`rr`, `rf`, `fr`, `ff`: outer mode, then inner mode).
//!
//! The inner gradient is `potential_grad` (reverse) or two `potential_jvp` (forward), both
//! differentiable callees of the simulation through `potential_hvp`, chosen by a constant
//! argument; the outer derivative is the simulation's `_grad` (reverse) or `_jvp` (forward).
use rune_ad::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use super::{argmin, decode, timed, unknown_function, Outcome};
use crate::timing::Runs;

/// The potential at `(x0, x1)` of unit charges at `(10, 10 − w)` and `(10, 0)`.
#[differentiable(hvp)]
pub fn potential(x0: f64, x1: f64, w: f64) -> f64 {
    let d1 = ((x0 - 10.0) * (x0 - 10.0) + (x1 - (10.0 - w)) * (x1 - (10.0 - w))).sqrt();
    let d2 = ((x0 - 10.0) * (x0 - 10.0) + x1 * x1).sqrt();
    1.0 / d1 + 1.0 / d2
}

/// The force's pull `∇ₓp` at `(x0, x1)`: the potential's gradient in reverse mode, or its two
/// forward-mode slopes along the axes (`forward`).
#[differentiable]
pub fn pull(x0: f64, x1: f64, w: f64, #[nodiff] forward: bool) -> (f64, f64) {
    if forward {
        let (_, a0) = potential_jvp(x0, x1, w, &1.0, &0.0, &0.0);
        let (_, a1) = potential_jvp(x0, x1, w, &0.0, &1.0, &0.0);
        return (a0, a1);
    }
    let (a0, a1, _) = potential_grad(x0, x1, w);
    (a0, a1)
}

/// Where the particle crosses the x-axis, squared, with the inner derivative in forward mode
/// or not (`inner_forward`).
#[differentiable]
pub fn crossing(w: f64, #[nodiff] inner_forward: bool) -> f64 {
    let (mut x0, mut x1) = (0.0, 8.0);
    let (mut v0, mut v1) = (0.75, 0.0);
    let dt = 0.1;
    let mut flying = true;
    while flying {
        let (a0, a1) = pull(x0, x1, w, inner_forward);
        if x1 + dt * v1 > 0.0 {
            x0 += dt * v0;
            x1 += dt * v1;
            v0 -= dt * a0;
            v1 -= dt * a1;
        } else {
            flying = false;
        }
    }
    let xf = x0 - x1 / v1 * v0;
    xf * xf
}

/// The control found by gradient descent from `w0`, with the outer derivative in reverse
/// (`outer_reverse`) or forward mode and the inner one as `inner_reverse` says.
pub fn solve(w0: f64, outer_reverse: bool, inner_reverse: bool) -> f64 {
    let inner_forward = !inner_reverse;
    let slope = |w| match outer_reverse {
        true => crossing_grad(w, inner_forward),
        false => crossing_jvp(w, inner_forward, &1.0).1,
    };
    argmin(|[w]| crossing(w, inner_forward), |[w]| [slope(w)], [w0])[0]
}

#[derive(Deserialize)]
struct Input {
    w: f64,
    #[serde(flatten)]
    runs: Runs,
}

/// Runs `rr`, `rf`, `fr` or `ff` on a `particle` input.
pub fn evaluate(function: &str, input: &Value) -> Result<Outcome, String> {
    let Input { w, runs } = decode("particle", input)?;
    let (outer_reverse, inner_reverse) = match function {
        "rr" => (true, true),
        "rf" => (true, false),
        "fr" => (false, true),
        "ff" => (false, false),
        _ => return Err(unknown_function("particle", function)),
    };
    Ok(timed(
        runs,
        &w,
        |&w| solve(w, outer_reverse, inner_reverse),
        Value::from,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GradBench's expected output for `w = 0`, every variant.
    const EXPECTED: f64 = 0.2071918746486116;

    #[test]
    fn every_variant_finds_the_reference_control() {
        for (outer, inner) in [(true, true), (true, false), (false, true), (false, false)] {
            let w = solve(0.0, outer, inner);
            assert!((w - EXPECTED).abs() < 1e-9, "{outer} {inner}: {w}");
        }
    }

    #[test]
    fn the_slopes_agree_with_finite_differences() {
        let h = 1e-6;
        for w in [0.0, 0.2] {
            let fd = (crossing(w + h, false) - crossing(w - h, false)) / (2.0 * h);
            for inner_forward in [false, true] {
                for slope in [
                    crossing_grad(w, inner_forward),
                    crossing_jvp(w, inner_forward, &1.0).1,
                ] {
                    assert!(
                        (slope - fd).abs() < 1e-6 * fd.abs().max(1.0),
                        "{slope} against {fd}"
                    );
                }
            }
        }
    }
}
