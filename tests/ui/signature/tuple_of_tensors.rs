use rune_ad::prelude::*;

#[differentiable]
fn f(pair: (Tensor<f64>, Tensor<f64>)) -> Tensor<f64> {
    (&pair.0 * &pair.1).sum()
}

fn main() {}
