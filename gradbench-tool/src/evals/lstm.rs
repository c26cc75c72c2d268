//! `lstm`: ADBench's LSTM with diagonal weights, `l` layers of `b` cells (the input
//! characters' bit count), run over a sequence of `c` characters: the loss is the mean
//! negative log-likelihood of each next character's bits, `objective`; `jacobian` is its
//! gradient in the layer parameters and in the input/output weights, from `objective_grad`.
//!
//! The weights are diagonal, so every op is elementwise on `b`-vectors (`b` = 7 for ASCII
//! text) and the `(c − 1) l` cell updates are tiny: the time goes to the ops, not to the
//! arithmetic. The layers therefore run as a wavefront: at step `s` layer `k` processes
//! character `s − k`, so that all layers update in the same two fused ops on `[l, b]`
//! tensors, `c + l − 2` steps instead of `(c − 1) l`: twice as fast as a loop over the layers
//! at `l = 6`, and faster at `l = 2` too since small strided views are copied once (the
//! gradient at `c = 1024`: 4.6 ms against 9.1 for the loop over the layers, one core).
//! Written on numbers instead (a cell a call), the layers' states would be a local list,
//! which puts a function of numbers back on 0-d tensors: measured, its gradient took twice
//! the wavefront's.
use rune_ad::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use super::{decode, matrix, timed, unknown_function, Outcome};
use crate::timing::Runs;

/// The loss: `−Σₜ Σᵢ yᵢ(t+1) (ŷᵢ(t) − ln(Σⱼ exp ŷⱼ(t) + 2)) / (b (c − 1))`, `ŷ(t)` the
/// prediction after character `t` and `y(t+1)` the next character's bits.
///
/// `main` is `[2l, 4b]`: for layer `k`, row `2k` holds the forget, input, output and change
/// weights and row `2k + 1` their biases. `extra` is `[3, b]`: the input weights, the output
/// weights and the output biases. `state` is `[2l, b]`, each layer's hidden state and cell,
/// and `sequence` `[c, b]`, the characters' bits. A layer updates its cell to
/// `cell · σ(x w_f + b_f) + σ(h w_i + b_i) · tanh(h w_c + b_c)` and its hidden state to
/// `σ(x w_o + b_o) · tanh(cell)`, `x` the layer's input: the character times the input
/// weights for the first layer, the hidden state of the layer below for the others.
///
/// In the wavefront the layers' inputs are the character and, below it, the previous step's
/// hidden states of all layers but the top one, times the input weights and ones (multiplied
/// inside the two gates that read them: an op fewer a step, and two rules fewer backward,
/// for a product per element computed twice; the gradient 10% faster at `l = 2`); a layer
/// that has not reached the first character yet (the first `l − 1` steps) keeps its state
/// (`where_cond`), and past the last character the lower layers run on, unread. The top
/// layer's hidden states are the predictions' inputs, gathered and scored at once.
#[differentiable]
pub fn objective(
    main: &Tensor<f64>,
    extra: &Tensor<f64>,
    #[nodiff] state: &Tensor<f64>,
    #[nodiff] sequence: &Tensor<f64>,
) -> Tensor<f64> {
    let l = main.shape()[0] / 2;
    let b = extra.shape()[1];
    let c = sequence.shape()[0];
    // Each layer's 8 rows of b: the 4 weights, then the 4 biases; and its state's 2 rows.
    let params = main.reshape(&[l, 8, b]);
    let w_f = params.shrink(&[(0, l), (0, 1), (0, b)]).reshape(&[l, b]);
    let w_i = params.shrink(&[(0, l), (1, 2), (0, b)]).reshape(&[l, b]);
    let w_o = params.shrink(&[(0, l), (2, 3), (0, b)]).reshape(&[l, b]);
    let w_c = params.shrink(&[(0, l), (3, 4), (0, b)]).reshape(&[l, b]);
    let b_f = params.shrink(&[(0, l), (4, 5), (0, b)]).reshape(&[l, b]);
    let b_i = params.shrink(&[(0, l), (5, 6), (0, b)]).reshape(&[l, b]);
    let b_o = params.shrink(&[(0, l), (6, 7), (0, b)]).reshape(&[l, b]);
    let b_c = params.shrink(&[(0, l), (7, 8), (0, b)]).reshape(&[l, b]);
    let initial = state.reshape(&[l, 2, b]);
    let mut hidden = initial.shrink(&[(0, l), (0, 1), (0, b)]).reshape(&[l, b]);
    let mut cell = initial.shrink(&[(0, l), (1, 2), (0, b)]).reshape(&[l, b]);
    let in_weight = extra.shrink(&[(0, 1), (0, b)]);
    let out_weight = extra.shrink(&[(1, 2), (0, b)]);
    let out_bias = extra.shrink(&[(2, 3), (0, b)]);
    let input_weight = concat(&[&in_weight, &Tensor::ones(&[l - 1, b])], 0);
    let layer = Tensor::<i64>::arange(l).reshape(&[l, 1]);
    let blank = Tensor::<f64>::zeros(&[1, b]);
    let mut hiddens = Vec::new();
    for s in 0..c + l - 2 {
        let x = if s + 1 < c {
            sequence.shrink(&[(s, s + 1), (0, b)])
        } else {
            blank.clone()
        };
        let input = concat(&[&x, &hidden.shrink(&[(0, l - 1), (0, b)])], 0);
        let started = layer.le(s as i64);
        let forget = (&input * &input_weight * &w_f + &b_f).sigmoid();
        let ingate = (&hidden * &w_i + &b_i).sigmoid();
        let change = (&hidden * &w_c + &b_c).tanh();
        let new_cell = where_cond(&started, &(&cell * forget + ingate * change), &cell);
        let outgate = (&input * &input_weight * &w_o + &b_o).sigmoid();
        hidden = where_cond(&started, &(outgate * new_cell.tanh()), &hidden);
        cell = new_cell;
        hiddens.push(hidden.clone());
    }
    // The top layer's hidden state after each character: row l − 1 of the states from step
    // l − 1 on.
    let top = concat(&hiddens, 0)
        .reshape(&[c + l - 2, l, b])
        .shrink(&[(l - 1, c + l - 2), (l - 1, l), (0, b)])
        .reshape(&[c - 1, b]);
    let predicted = top * &out_weight + &out_bias;
    let lse = (predicted.exp().sum_axes(&[1], true) + 2.0).ln();
    let next = sequence.shrink(&[(1, c), (0, b)]);
    -(next * (predicted - lse)).sum() / (b * (c - 1)) as f64
}

/// A decoded `lstm` input.
#[derive(Clone, Debug)]
pub struct Problem {
    /// The layers' weights and biases, `[2l, 4b]`.
    pub main: Tensor<f64>,
    /// The input weights, output weights and output biases, `[3, b]`.
    pub extra: Tensor<f64>,
    /// Each layer's hidden state and cell, `[2l, b]`.
    pub state: Tensor<f64>,
    /// The characters' bits, `[c, b]`.
    pub sequence: Tensor<f64>,
}

#[derive(Deserialize)]
struct Input {
    main_params: Vec<Vec<f64>>,
    extra_params: Vec<Vec<f64>>,
    state: Vec<Vec<f64>>,
    sequence: Vec<Vec<f64>>,
    #[serde(flatten)]
    runs: Runs,
}

/// Decodes an `lstm` input, checking every matrix against `l` and `b` (from `main_params`,
/// as GradBench's C++ tool takes them: `2l` rows of `4b`).
pub fn prepare(input: &Value) -> Result<(Problem, Runs), String> {
    let i: Input = decode("lstm", input)?;
    let rows = i.main_params.len();
    let b = i.main_params.first().map_or(0, |r| r.len() / 4);
    if rows == 0 || !rows.is_multiple_of(2) || b == 0 {
        return Err(format!(
            "lstm: main_params needs an even number of rows of 4b ≥ 4 entries, got {rows} rows"
        ));
    }
    let count = |name: &str, len: usize, expected: usize| {
        if len == expected {
            Ok(())
        } else {
            Err(format!("lstm: {name} has {len} rows, expected {expected}"))
        }
    };
    count("extra_params", i.extra_params.len(), 3)?;
    count("state", i.state.len(), rows)?;
    if i.sequence.len() < 2 {
        return Err(format!(
            "lstm: sequence needs at least 2 characters, got {}",
            i.sequence.len()
        ));
    }
    let problem = Problem {
        main: matrix("lstm: main_params", i.main_params, 4 * b)?,
        extra: matrix("lstm: extra_params", i.extra_params, b)?,
        state: matrix("lstm: state", i.state, b)?,
        sequence: matrix("lstm: sequence", i.sequence, b)?,
    };
    Ok((problem, i.runs))
}

/// `objective` on a decoded input.
pub fn primal(p: &Problem) -> f64 {
    objective(&p.main, &p.extra, &p.state, &p.sequence).item()
}

/// The gradient in `main_params` then `extra_params`, each row-major, in one list.
pub fn jacobian(p: &Problem) -> Vec<f64> {
    let (main, extra) = objective_grad(&p.main, &p.extra, &p.state, &p.sequence);
    let mut flat = main.to_vec();
    flat.extend(extra.to_vec());
    flat
}

/// Runs `objective` or `jacobian` on an `lstm` input.
pub fn evaluate(function: &str, input: &Value) -> Result<Outcome, String> {
    let (problem, runs) = prepare(input)?;
    match function {
        "objective" => Ok(timed(runs, &problem, primal, Value::from)),
        "jacobian" => Ok(timed(runs, &problem, jacobian, Value::from)),
        _ => Err(unknown_function("lstm", function)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sigmoid(x: f64) -> f64 {
        1.0 / (1.0 + (-x).exp())
    }

    /// The loss as GradBench's C++ `lstm::objective` computes it, a cell at a time (layers
    /// inside characters), on row-major lists.
    fn by_cells(main: &[f64], extra: &[f64], state: &[f64], sequence: &[f64], b: usize) -> f64 {
        let l = main.len() / (8 * b);
        let c = sequence.len() / b;
        let mut state = state.to_vec();
        let mut total = 0.0;
        for t in 0..c - 1 {
            let mut ypred = vec![0.0; b];
            for i in 0..b {
                let mut x = sequence[t * b + i] * extra[i];
                for k in 0..l {
                    let p = |g: usize| main[(8 * k + g) * b + i];
                    let (h, cell) = ((2 * k) * b + i, (2 * k + 1) * b + i);
                    let forget = sigmoid(x * p(0) + p(4));
                    let ingate = sigmoid(state[h] * p(1) + p(5));
                    let outgate = sigmoid(x * p(2) + p(6));
                    let change = (state[h] * p(3) + p(7)).tanh();
                    state[cell] = state[cell] * forget + ingate * change;
                    state[h] = outgate * state[cell].tanh();
                    x = state[h];
                }
                ypred[i] = x * extra[b + i] + extra[2 * b + i];
            }
            let lse = (ypred.iter().map(|y| y.exp()).sum::<f64>() + 2.0).ln();
            for i in 0..b {
                total += sequence[(t + 1) * b + i] * (ypred[i] - lse);
            }
        }
        -total / (b * (c - 1)) as f64
    }

    /// The wavefront gives the loss of the cell-by-cell loop, for one layer (no wavefront)
    /// to three (the first two steps partly idle), over as few as two characters.
    #[test]
    fn the_wavefront_computes_the_cells_loss() {
        for (l, b, c) in [(1, 1, 2), (1, 3, 5), (2, 3, 2), (2, 7, 6), (3, 4, 9)] {
            let seed = (l * 100 + b * 10 + c) as u64;
            let main = Tensor::rand_uniform(&[2 * l, 4 * b], 0.0, 1.0, seed);
            let extra = Tensor::rand_uniform(&[3, b], 0.0, 1.0, seed + 1);
            let state = Tensor::rand_uniform(&[2 * l, b], 0.0, 1.0, seed + 2);
            let sequence = Tensor::rand_uniform(&[c, b], 0.0, 1.0, seed + 3)
                .gt(0.5)
                .cast::<f64>();
            let expected = by_cells(
                &main.to_vec(),
                &extra.to_vec(),
                &state.to_vec(),
                &sequence.to_vec(),
                b,
            );
            let loss = objective(&main, &extra, &state, &sequence).item();
            assert!(
                (loss - expected).abs() < 1e-14,
                "l={l} b={b} c={c}: {loss} against {expected}"
            );
        }
    }

    #[test]
    fn inconsistent_rows_are_refused() {
        let row = |n: usize| vec![0.0; n];
        let input = serde_json::json!({
            "main_params": [row(8), row(8)],
            "extra_params": [row(2), row(2), row(2)],
            "state": [row(2), row(2)],
            "sequence": [row(2), row(3)],
        });
        let error = prepare(&input).unwrap_err();
        assert!(
            error.contains("lstm: sequence: row 1 has 3 entries, expected 2"),
            "{error}"
        );
    }
}
