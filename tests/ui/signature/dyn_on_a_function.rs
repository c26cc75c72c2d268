use rune_ad::prelude::*;

#[differentiable(dyn)]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    x.exp()
}

fn main() {}
