//! `kmeans`: the k-means cost `Σᵢ minⱼ ‖Pᵢ − Cⱼ‖²` and its Newton direction in the
//! centroids, the gradient divided by the Hessian's diagonal.
use rune_ad::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use super::{decode, matrix, matrix_json, timed, unknown_function, Outcome};
use crate::timing::Runs;

/// `Σᵢ minⱼ ‖Pᵢ − Cⱼ‖²` for points `P` (`[N, D]`) and centroids `C` (`[K, D]`), summed over
/// blocks of points (`block_cost`) that keep each block's `[rows, K]` distances near
/// `BLOCK_ELEMENTS` elements.
///
/// Taken whole, the distances of the largest default workload (`N = 10⁴`, `K = 1000`) are
/// 80 MB, and 160 MB as the dual numbers `cost_hvp` computes them on: every pass over them
/// went to memory, and their first touch cost up to 0.9 s of page faults in the first call.
/// In blocks of 2 MB they stay in cache and the allocator reuses the same memory from block to
/// block (docs/benchmarks.md, "GradBench").
#[differentiable(hvp)]
pub fn cost(centroids: &Tensor<f64>, #[nodiff] points: &Tensor<f64>) -> Tensor<f64> {
    let (n, d) = (points.shape()[0], points.shape()[1]);
    let rows = BLOCK_ELEMENTS.div_ceil(centroids.shape()[0]).max(64);
    let mut total = Tensor::<f64>::scalar(0.0);
    for start in (0..n).step_by(rows) {
        let block = points.shrink(&[(start, (start + rows).min(n)), (0, d)]);
        total += block_cost(centroids, &block);
    }
    total
}

/// The number of distances a block of points aims at (2 MB of `f64`).
const BLOCK_ELEMENTS: usize = 1 << 18;

/// `Σᵢ minⱼ ‖Pᵢ − Cⱼ‖²` over one block of points.
///
/// The minimum over `j` is attained at each point's nearest centroid, so the block's cost is
/// `Σᵢ ‖Pᵢ − C_{a(i)}‖²` with `a(i)` the index of that centroid, and so are its derivatives
/// wherever the nearest centroid is unique (the assignment is piecewise constant in `C`). The
/// assignment is found on `stop_gradient(C)`: a constant at every order, so that neither the
/// gradient nor the Hessian-vector product of [`cost_hvp`] takes a derivative of the `[rows, K]`
/// distances, only of the `[rows, D]` residuals; `cost_hvp`'s dual twin computes the assignment
/// on real numbers, as this function does (rune-macros' `twin/primal.rs`: it reads only the
/// `#[nodiff]` points and `stop_gradient` values). The distances for the assignment drop each
/// point's own `‖Pᵢ‖²` (the same for every `j`) and are expanded as `‖Cⱼ‖² − 2 Pᵢ·Cⱼ`, one
/// `[rows, K]` matrix product instead of a `[rows, K, D]` difference; its factor 2 scales the
/// `[D, K]` centroids, not the `[rows, K]` product (a pass over the scores fewer).
#[differentiable(hvp)]
fn block_cost(centroids: &Tensor<f64>, #[nodiff] points: &Tensor<f64>) -> Tensor<f64> {
    let fixed = stop_gradient(centroids);
    let scores = (&fixed * &fixed).sum_axes(&[1], false) - points.matmul(&(fixed.t() * 2.0));
    let nearest = scores.argmin(1);
    let residuals = points - centroids.index_select(0, &nearest);
    (&residuals * &residuals).sum()
}

/// The Newton direction `∇f / diag(H)`: both come from one forward-over-reverse pass
/// (`cost_hvp`) with an all-ones direction, since the Hessian in `C` is diagonal and so
/// `H·1` is its diagonal.
pub fn direction(centroids: &Tensor<f64>, points: &Tensor<f64>) -> Tensor<f64> {
    let ones = Tensor::ones(centroids.shape());
    let (gradient, hessian_diagonal) = cost_hvp(centroids, points, &ones);
    gradient / hessian_diagonal
}

#[derive(Deserialize)]
struct Input {
    points: Vec<Vec<f64>>,
    centroids: Vec<Vec<f64>>,
    #[serde(flatten)]
    runs: Runs,
}

/// Decodes a `kmeans` input into points, centroids and its timing controls.
pub fn prepare(input: &Value) -> Result<(Tensor<f64>, Tensor<f64>, Runs), String> {
    let Input {
        points,
        centroids,
        runs,
    } = decode("kmeans", input)?;
    let d = points.first().map_or(0, Vec::len);
    if points.is_empty() || centroids.is_empty() || d == 0 {
        return Err("kmeans: needs at least one point, one centroid and d ≥ 1".into());
    }
    Ok((
        matrix("kmeans: points", points, d)?,
        matrix("kmeans: centroids", centroids, d)?,
        runs,
    ))
}

/// Runs `cost` or `dir` on a `kmeans` input.
pub fn evaluate(function: &str, input: &Value) -> Result<Outcome, String> {
    let (points, centroids, runs) = prepare(input)?;
    match function {
        "cost" => Ok(timed(
            runs,
            &centroids,
            |c| cost(c, &points).item(),
            Value::from,
        )),
        "dir" => Ok(timed(
            runs,
            &centroids,
            |c| direction(c, &points),
            |dir| matrix_json(&dir),
        )),
        _ => Err(unknown_function("kmeans", function)),
    }
}
