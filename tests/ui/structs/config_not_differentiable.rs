use rune_ad::prelude::*;

struct Config {
    scale: f64,
}

#[differentiable]
fn f(x: &Tensor<f64>, config: &Config) -> Tensor<f64> {
    x * config.scale
}

fn main() {}
