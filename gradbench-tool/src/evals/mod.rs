//! The evals: each module holds its `#[differentiable]` functions, the conversion of its JSON
//! input into tensors (outside the timed region) and its entry point for `evaluate` messages.
use rune_ad::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::timing::{measure, Runs};

pub mod ba;
pub mod det;
pub mod gmm;
pub mod hello;
pub mod ht;
pub mod kmeans;
pub mod llsq;
pub mod lse;
pub mod lstm;
pub mod ode;
pub mod particle;
pub mod saddle;

/// The modules this tool implements, as `define` names them.
pub const MODULES: &[&str] = &[
    "hello", "lse", "llsq", "gmm", "kmeans", "ode", "particle", "saddle", "ba", "det", "ht", "lstm",
];

/// What an `evaluate` returns: the last run's output and the time of every run.
#[derive(Debug)]
pub struct Outcome {
    /// The function's result, in the eval's JSON shape.
    pub output: Value,
    /// Nanoseconds of each run, in run order.
    pub timings: Vec<u64>,
}

/// Runs `function` of `module` on `input` under the input's timing controls.
///
/// # Errors
/// An unknown module or function, or an input whose fields or shapes do not fit the eval.
pub fn evaluate(module: &str, function: &str, input: &Value) -> Result<Outcome, String> {
    match module {
        "hello" => hello::evaluate(function, input),
        "lse" => lse::evaluate(function, input),
        "llsq" => llsq::evaluate(function, input),
        "gmm" => gmm::evaluate(function, input),
        "kmeans" => kmeans::evaluate(function, input),
        "ode" => ode::evaluate(function, input),
        "particle" => particle::evaluate(function, input),
        "saddle" => saddle::evaluate(function, input),
        "ba" => ba::evaluate(function, input),
        "det" => det::evaluate(function, input),
        "ht" => ht::evaluate(function, input),
        "lstm" => lstm::evaluate(function, input),
        _ => Err(format!("module {module} not implemented")),
    }
}

/// Decodes `input` into the eval's input type, with the field at fault in the error.
pub(crate) fn decode<T: DeserializeOwned>(module: &str, input: &Value) -> Result<T, String> {
    T::deserialize(input).map_err(|e| format!("{module}: bad input: {e}"))
}

/// Runs `f` under `runs` and converts its last result with `to_json` (outside the clock).
pub(crate) fn timed<I, O>(
    runs: Runs,
    input: &I,
    f: impl FnMut(&I) -> O,
    to_json: impl FnOnce(O) -> Value,
) -> Outcome {
    let (out, timings) = measure(runs, input, f);
    Outcome {
        output: to_json(out),
        timings,
    }
}

/// The error for a function the module does not have.
pub(crate) fn unknown_function(module: &str, function: &str) -> String {
    format!("module {module} has no function {function}")
}

/// A `[rows][cols]` JSON matrix as a 2-D tensor; `cols` is given so that an empty matrix (or
/// rows of length 0, such as gmm's `l` at D = 1) still gets its shape.
pub(crate) fn matrix(name: &str, rows: Vec<Vec<f64>>, cols: usize) -> Result<Tensor<f64>, String> {
    let n = rows.len();
    let mut data = Vec::with_capacity(n * cols);
    for (i, row) in rows.into_iter().enumerate() {
        if row.len() != cols {
            return Err(format!(
                "{name}: row {i} has {} entries, expected {cols}",
                row.len()
            ));
        }
        data.extend(row);
    }
    Ok(Tensor::from_vec(data, &[n, cols]))
}

/// A 1-D tensor as a JSON array.
pub(crate) fn vector_json(t: &Tensor<f64>) -> Value {
    Value::from(t.to_vec())
}

/// A 2-D tensor as a JSON array of rows.
pub(crate) fn matrix_json(t: &Tensor<f64>) -> Value {
    let cols = t.shape()[1];
    let data = t.to_vec();
    if cols == 0 {
        return Value::from(vec![Value::from(Vec::<f64>::new()); t.shape()[0]]);
    }
    Value::from(
        data.chunks(cols)
            .map(|row| Value::from(row.to_vec()))
            .collect::<Vec<_>>(),
    )
}

/// GradBench's gradient descent (`multivariateArgmin` of its reference tools, for `particle`
/// and `saddle`): steps of `eta` along the negative gradient `g`, `eta` halved after a step
/// that does not descend and doubled after ten that do, until the gradient or the step is
/// shorter than `1e-5`.
pub(crate) fn argmin<const N: usize>(
    f: impl Fn([f64; N]) -> f64,
    g: impl Fn([f64; N]) -> [f64; N],
    x0: [f64; N],
) -> [f64; N] {
    let norm = |v: [f64; N]| v.iter().map(|a| a * a).sum::<f64>().sqrt();
    let (mut x, mut fx, mut gx) = (x0, f(x0), g(x0));
    let (mut eta, mut i) = (1e-5, 0);
    loop {
        if norm(gx) <= 1e-5 {
            return x;
        }
        if i == 10 {
            eta *= 2.0;
            i = 0;
            continue;
        }
        let next: [f64; N] = std::array::from_fn(|k| x[k] - eta * gx[k]);
        if norm(std::array::from_fn(|k| x[k] - next[k])) <= 1e-5 {
            return x;
        }
        let f_next = f(next);
        if f_next < fx {
            (x, fx, gx) = (next, f_next, g(next));
            i += 1;
        } else {
            eta /= 2.0;
            i = 0;
        }
    }
}
