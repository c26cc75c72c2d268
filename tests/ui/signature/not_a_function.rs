use rune_ad::prelude::*;

#[differentiable]
struct Weights {
    w: Tensor<f64>,
}

fn main() {}
