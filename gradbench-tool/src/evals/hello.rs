//! `hello`, GradBench's protocol smoke test: `square(x) = x²` and its derivative `double`.
use rune_ad::prelude::*;
use serde_json::Value;

use super::{decode, timed, unknown_function, Outcome};
use crate::timing::Runs;

/// `x²`.
#[differentiable]
pub fn square(x: f64) -> f64 {
    x * x
}

/// Runs `square` or `double` (the derivative of `square`) once: `hello`'s inputs carry no
/// timing controls.
pub fn evaluate(function: &str, input: &Value) -> Result<Outcome, String> {
    let x: f64 = decode("hello", input)?;
    match function {
        "square" => Ok(timed(Runs::ONCE, &x, |&x| square(x), Value::from)),
        "double" => Ok(timed(Runs::ONCE, &x, |&x| square_grad(x), Value::from)),
        _ => Err(unknown_function("hello", function)),
    }
}
