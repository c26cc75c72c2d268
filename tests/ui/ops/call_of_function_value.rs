use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>, #[nodiff] activation: fn(&Tensor<f64>) -> Tensor<f64>) -> Tensor<f64> {
    activation(x).sum()
}

fn main() {}
