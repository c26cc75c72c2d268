use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) {
    let _ = x.exp();
}

fn main() {}
