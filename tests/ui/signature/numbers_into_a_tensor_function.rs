// In a function returning a tensor, numbers and lists of numbers are constants: with no other
// parameter, nothing is differentiated, and the message says where numbers are.
use rune_ad::prelude::*;

#[differentiable]
fn f(scale: f64, offsets: &[f64]) -> Tensor<f64> {
    Tensor::from(offsets) * scale
}

fn main() {}
