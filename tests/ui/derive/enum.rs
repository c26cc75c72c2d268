use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
enum Params {
    Small(Tensor<f64>),
    Large { w: Tensor<f64>, b: Tensor<f64> },
}

fn main() {}
