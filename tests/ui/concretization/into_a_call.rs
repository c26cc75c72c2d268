use rune_ad::prelude::*;

#[differentiable]
fn g(x: &Tensor<f64>, k: f64) -> Tensor<f64> {
    x * k
}

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let first = x.to_vec()[0];
    g(x, first)
}

fn main() {}
