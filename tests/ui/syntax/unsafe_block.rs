use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let k = unsafe { 2.0 };
    x * k
}

fn main() {}
