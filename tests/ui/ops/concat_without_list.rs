use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let parts = [x, x];
    concat(&parts, 0)
}

fn main() {}
