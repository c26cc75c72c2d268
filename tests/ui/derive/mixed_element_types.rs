use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Encoder {
    w: Tensor<f32>,
}

#[derive(Clone, Differentiable)]
struct Model {
    head: Tensor<f64>,
    enc: Encoder,
}

fn main() {}
