//! `lse`: log-sum-exp of a vector, built from max, exp, sum and log; its gradient is the
//! softmax.
use rune_ad::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use super::{decode, timed, unknown_function, vector_json, Outcome};
use crate::timing::Runs;

/// `A + ln Σᵢ exp(xᵢ − A)` with `A = maxᵢ xᵢ`.
///
/// The shift `A` only keeps `exp` in range: the value does not depend on it, so it is held
/// constant (`stop_gradient`, as JAX's `logsumexp` does) and the gradient is exactly the
/// softmax, with no contribution through the argmax.
#[differentiable]
pub fn logsumexp(x: &Tensor<f64>) -> Tensor<f64> {
    let a = stop_gradient(&x.max());
    (x - &a).exp().sum().ln() + a
}

#[derive(Deserialize)]
struct Input {
    x: Vec<f64>,
    #[serde(flatten)]
    runs: Runs,
}

/// Decodes an `lse` input into `x` and its timing controls.
pub fn prepare(input: &Value) -> Result<(Tensor<f64>, Runs), String> {
    let Input { x, runs } = decode("lse", input)?;
    if x.is_empty() {
        return Err("lse: x is empty".into());
    }
    let n = x.len();
    Ok((Tensor::from_vec(x, &[n]), runs))
}

/// Runs `primal` or `gradient` on an `lse` input.
pub fn evaluate(function: &str, input: &Value) -> Result<Outcome, String> {
    let (x, runs) = prepare(input)?;
    match function {
        "primal" => Ok(timed(runs, &x, |x| logsumexp(x).item(), Value::from)),
        "gradient" => Ok(timed(runs, &x, logsumexp_grad, |g| vector_json(&g))),
        _ => Err(unknown_function("lse", function)),
    }
}
