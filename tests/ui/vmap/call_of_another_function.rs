use rune_ad::prelude::*;

#[differentiable]
fn g(x: &Tensor<f64>) -> Tensor<f64> {
    x.tanh()
}

#[differentiable(vmap)]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    g(x).sum()
}

fn main() {}
