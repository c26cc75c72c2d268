use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    x.bessel_j0()
}

fn main() {}
