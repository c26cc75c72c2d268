use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Config {
    #[nodiff]
    mask: Tensor<f64>,
    #[nodiff]
    steps: usize,
}

fn main() {}
