use rune_ad::prelude::*;

#[differentiable]
fn f(x: &mut Tensor<f64>) -> Tensor<f64> {
    x.exp()
}

fn main() {}
