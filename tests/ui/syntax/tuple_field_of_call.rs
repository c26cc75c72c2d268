use rune_ad::prelude::*;

#[differentiable]
fn pair(x: &Tensor<f64>) -> (Tensor<f64>, Tensor<f64>) {
    (x.exp(), x.sin())
}

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    pair(x).1
}

fn main() {}
