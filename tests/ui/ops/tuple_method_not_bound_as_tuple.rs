// A method returning several factors is bound with a tuple pattern, or one factor's op called.
use rune_ad::prelude::*;

#[differentiable]
fn f(a: &Tensor<f64>) -> Tensor<f64> {
    let factors = a.qr();
    factors.1
}

fn main() {}
