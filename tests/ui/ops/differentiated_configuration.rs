use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>, p: &Tensor<f64>) -> Tensor<f64> {
    x.clamp(p, 1.0)
}

fn main() {}
