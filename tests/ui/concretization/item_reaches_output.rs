use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let total = x.sum().item();
    x * total
}

fn main() {}
