use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let scale = |v: f64| v * 2.0;
    x * scale(1.5)
}

fn main() {}
