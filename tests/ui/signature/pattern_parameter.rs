use rune_ad::prelude::*;

#[differentiable]
fn f((x, y): (&Tensor<f64>, &Tensor<f64>)) -> Tensor<f64> {
    x * y
}

fn main() {}
