//! `kmeans`: the k-means cost `Σᵢ minⱼ ‖Pᵢ − Cⱼ‖²` and its Newton direction in the
//! centroids, the gradient divided by the Hessian's diagonal.
use rune_ad::prelude::*;
use serde::Deserialize;
use serde_json::Value;

use super::{decode, matrix, matrix_json, timed, unknown_function, Outcome};
use crate::timing::Runs;

/// `Σᵢ minⱼ ‖Pᵢ − Cⱼ‖²` for points `P` (`[N, D]`) and centroids `C` (`[K, D]`).
///
/// The squared distances are expanded as `‖Pᵢ‖² − 2 Pᵢ·Cⱼ + ‖Cⱼ‖²`, one `[N, K]` matrix
/// product instead of an `[N, K, D]` difference (1.3 GB at the largest default workload).
/// `min_axes` sends each point's gradient to its nearest centroid.
#[differentiable(hvp)]
pub fn cost(centroids: &Tensor<f64>, #[nodiff] points: &Tensor<f64>) -> Tensor<f64> {
    let point_norms = (points * points).sum_axes(&[1], true);
    let centroid_norms = (centroids * centroids).sum_axes(&[1], false);
    let distances = point_norms - points.matmul(&centroids.t()) * 2.0 + centroid_norms;
    distances.min_axes(&[1], false).sum()
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
