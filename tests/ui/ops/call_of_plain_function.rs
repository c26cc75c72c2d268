use rune_ad::prelude::*;

fn plain(x: &Tensor<f64>) -> Tensor<f64> {
    x.exp()
}

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    plain(x) * 2.0
}

fn main() {}
