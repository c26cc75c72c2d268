use rune_ad::prelude::*;

#[differentiable]
fn scale_by(x: &Tensor<f64>, #[nodiff] c: &Tensor<f64>) -> Tensor<f64> {
    x * c
}

#[differentiable]
fn f(x: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {
    scale_by(x, &y.exp()).sum()
}

fn main() {}
