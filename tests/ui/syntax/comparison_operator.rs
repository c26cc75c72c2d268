use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<f64> {
    let _bigger = x > y;
    x * y
}

fn main() {}
