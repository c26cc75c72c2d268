// `hvp` on a function of a structure of `f64` tensors: one error, saying to make the structure
// generic over its element type or to pass its tensors.
use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Codebook {
    centroids: Tensor<f64>,
    layers: Vec<Tensor<f64>>,
}

#[differentiable(hvp)]
fn cost(book: &Codebook, #[nodiff] points: &Tensor<f64>) -> Tensor<f64> {
    let mut residuals = points - &book.centroids;
    for w in &book.layers {
        residuals = residuals.matmul(w).tanh();
    }
    (&residuals * &residuals).sum()
}

fn main() {}
