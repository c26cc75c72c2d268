//! `llsq`: the least-squares objective `½ Σᵢ (sign(tᵢ) − Σⱼ xⱼ tᵢʲ)²` of a polynomial fit on
//! `n` evenly spaced points `tᵢ ∈ [−1, 1]`.
use rune_ad::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use super::{decode, timed, unknown_function, vector_json, Outcome};
use crate::timing::Runs;

/// `½ ‖s − T x‖²` with `tᵢ = −1 + 2i/(n − 1)`, `sᵢ = sign(tᵢ)` (0 at `t = 0`) and the
/// Vandermonde matrix `T[i][j] = tᵢʲ` (n × m).
///
/// `T x` is the polynomial with coefficients `x` at every point, `polyval` (NumPy's, highest
/// degree first, so `x` reversed): Horner's rule in one op, m passes over the points where `T`
/// would be n × m (16 MB at the largest default workload) written and read on every call, and
/// where a loop of m tensor steps would pay each step's fixed cost twice. The points and signs
/// are built on every call, as GradBench times them.
#[differentiable]
pub fn objective(x: &Tensor<f64>, #[nodiff] n: usize) -> Tensor<f64> {
    let t = Tensor::<f64>::arange(n) * 2.0 / (n - 1) as f64 - 1.0;
    let s = t.gt(0.0).cast::<f64>() - t.lt(0.0).cast::<f64>();
    let r = s - polyval(&x.flip(&[0]), &t);
    (&r * &r).sum() * 0.5
}

#[derive(Deserialize)]
struct Input {
    x: Vec<f64>,
    n: usize,
    #[serde(flatten)]
    runs: Runs,
}

/// Decodes an `llsq` input into `x`, `n` and its timing controls.
pub fn prepare(input: &Value) -> Result<(Tensor<f64>, usize, Runs), String> {
    let Input { x, n, runs } = decode("llsq", input)?;
    if x.is_empty() || n < 2 {
        return Err(format!(
            "llsq: needs at least one coefficient and two points, got m = {} and n = {n}",
            x.len()
        ));
    }
    let m = x.len();
    Ok((Tensor::from_vec(x, &[m]), n, runs))
}

/// Runs `primal` or `gradient` on an `llsq` input.
pub fn evaluate(function: &str, input: &Value) -> Result<Outcome, String> {
    let (x, n, runs) = prepare(input)?;
    match function {
        "primal" => Ok(timed(runs, &x, |x| objective(x, n).item(), Value::from)),
        "gradient" => Ok(timed(
            runs,
            &x,
            |x| objective_grad(x, n),
            |g| vector_json(&g),
        )),
        _ => Err(unknown_function("llsq", function)),
    }
}
