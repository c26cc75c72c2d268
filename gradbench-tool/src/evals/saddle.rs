//! `saddle`: the saddle point of `f(p₁, p₂) = ‖p₁‖² − ‖p₂‖²`, found as the minimum over `p₁` of
//! the maximum over `p₂`, each by gradient descent. The cost of `p₁` runs the inner ascent, which
//! takes `f`'s gradient in `p₂`, and the outer descent differentiates that cost, inner ascent
//! and all: nested derivatives, in the four orders GradBench asks for (`rr`, `rf`, `fr`, `ff`:
//! outer mode, then inner mode).
//!
//! The inner gradient is `f_grad` (reverse) or two `f_jvp` (forward), differentiable callees of
//! the cost through `f_hvp`, chosen by a constant argument (`climb`); the outer one is the
//! cost's `_grad` or two of its `_jvp`.
use rune_ad::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use super::{argmin, decode, timed, unknown_function, Outcome};
use crate::timing::Runs;

/// `‖p₁‖² − ‖p₂‖²`.
#[differentiable(hvp)]
pub fn f(a0: f64, a1: f64, b0: f64, b1: f64) -> f64 {
    (a0 * a0 + a1 * a1) - (b0 * b0 + b1 * b1)
}

/// The direction of descent of `−f` in `p₂`, `∇_{p₂} f`: `f`'s gradient in reverse mode, or
/// its two forward-mode slopes (`forward`).
#[differentiable]
pub fn climb(a0: f64, a1: f64, b0: f64, b1: f64, #[nodiff] forward: bool) -> (f64, f64) {
    if forward {
        let (_, g0) = f_jvp(a0, a1, b0, b1, &0.0, &0.0, &1.0, &0.0);
        let (_, g1) = f_jvp(a0, a1, b0, b1, &0.0, &0.0, &0.0, &1.0);
        return (-g0, -g1);
    }
    let (_, _, g0, g1) = f_grad(a0, a1, b0, b1);
    (-g0, -g1)
}

/// `f(p₁, p₂*)` at the `p₂*` that gradient ascent from `(s0, s1)` reaches (GradBench's
/// `multivariateMax`), the gradient in `p₂` in forward mode or not (`inner_forward`).
#[differentiable]
pub fn cost(
    a0: f64,
    a1: f64,
    #[nodiff] s0: f64,
    #[nodiff] s1: f64,
    #[nodiff] inner_forward: bool,
) -> f64 {
    let (mut b0, mut b1) = (s0, s1);
    let mut fx = -f(a0, a1, b0, b1);
    let (mut d0, mut d1) = climb(a0, a1, b0, b1, inner_forward);
    let mut eta = 1e-5;
    let mut i = 0;
    let mut climbing = true;
    while climbing {
        if (d0 * d0 + d1 * d1).sqrt() <= 1e-5 {
            climbing = false;
        } else if i == 10 {
            eta *= 2.0;
            i = 0;
        } else {
            let (n0, n1) = (b0 - eta * d0, b1 - eta * d1);
            if ((b0 - n0) * (b0 - n0) + (b1 - n1) * (b1 - n1)).sqrt() <= 1e-5 {
                climbing = false;
            } else {
                let f_next = -f(a0, a1, n0, n1);
                if f_next < fx {
                    b0 = n0;
                    b1 = n1;
                    fx = f_next;
                    let (e0, e1) = climb(a0, a1, b0, b1, inner_forward);
                    d0 = e0;
                    d1 = e1;
                    i += 1;
                } else {
                    eta /= 2.0;
                    i = 0;
                }
            }
        }
    }
    f(a0, a1, b0, b1)
}

/// The saddle point `p₁ ++ p₂` from `start`, with the outer derivative in reverse
/// (`outer_reverse`) or forward mode and the inner one as `inner_reverse` says.
pub fn solve(start: [f64; 2], outer_reverse: bool, inner_reverse: bool) -> [f64; 4] {
    let [s0, s1] = start;
    let inner_forward = !inner_reverse;
    let slope = |[a0, a1]: [f64; 2]| match outer_reverse {
        true => {
            let (g0, g1) = cost_grad(a0, a1, s0, s1, inner_forward);
            [g0, g1]
        }
        false => [
            cost_jvp(a0, a1, s0, s1, inner_forward, &1.0, &0.0).1,
            cost_jvp(a0, a1, s0, s1, inner_forward, &0.0, &1.0).1,
        ],
    };
    let p1 = argmin(|[a0, a1]| cost(a0, a1, s0, s1, inner_forward), slope, start);
    // The maximum over `p₂` at that `p₁`: the descent of `−f`, along `climb`.
    let [a0, a1] = p1;
    let ascent = |[b0, b1]: [f64; 2]| {
        let (d0, d1) = climb(a0, a1, b0, b1, inner_forward);
        [d0, d1]
    };
    let [b0, b1] = argmin(|[b0, b1]| -f(a0, a1, b0, b1), ascent, start);
    [a0, a1, b0, b1]
}

#[derive(Deserialize)]
struct Input {
    start: [f64; 2],
    #[serde(flatten)]
    runs: Runs,
}

/// Runs `rr`, `rf`, `fr` or `ff` on a `saddle` input.
pub fn evaluate(function: &str, input: &Value) -> Result<Outcome, String> {
    let Input { start, runs } = decode("saddle", input)?;
    let (outer_reverse, inner_reverse) = match function {
        "rr" => (true, true),
        "rf" => (true, false),
        "fr" => (false, true),
        "ff" => (false, false),
        _ => return Err(unknown_function("saddle", function)),
    };
    Ok(timed(
        runs,
        &start,
        |&start| solve(start, outer_reverse, inner_reverse),
        |point| Value::from(point.to_vec()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GradBench's expected output from `(1, 1)`, every variant.
    const EXPECTED: f64 = 8.246324826140356e-06;

    #[test]
    fn every_variant_finds_the_reference_point() {
        for (outer, inner) in [(true, true), (true, false), (false, true), (false, false)] {
            let point = solve([1.0, 1.0], outer, inner);
            for p in point {
                assert!((p - EXPECTED).abs() < 1e-12, "{outer} {inner}: {point:?}");
            }
        }
    }

    #[test]
    fn the_costs_slope_agrees_with_finite_differences() {
        // The inner ascent ends near p₂ = 0 whatever p₁ is, so the cost is close to ‖p₁‖²; its
        // derivative through the ascent is checked against central differences of the cost.
        let h = 1e-5;
        let (a0, a1) = (0.7, -0.4);
        let fd =
            (cost(a0 + h, a1, 1.0, 1.0, false) - cost(a0 - h, a1, 1.0, 1.0, false)) / (2.0 * h);
        for inner_forward in [false, true] {
            let (g0, _) = cost_grad(a0, a1, 1.0, 1.0, inner_forward);
            let t0 = cost_jvp(a0, a1, 1.0, 1.0, inner_forward, &1.0, &0.0).1;
            for slope in [g0, t0] {
                assert!((slope - fd).abs() < 1e-6, "{slope} against {fd}");
            }
        }
    }
}
