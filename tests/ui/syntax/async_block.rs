use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let _pending = async { 1 };
    x.exp()
}

fn main() {}
