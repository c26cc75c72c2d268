use rune_ad::prelude::*;

#[differentiable]
fn f(#[nodiff] x: &Tensor<f64>, n: usize) -> Tensor<f64> {
    x * n as f64
}

fn main() {}
