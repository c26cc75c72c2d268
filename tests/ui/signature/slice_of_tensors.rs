use rune_ad::prelude::*;

#[differentiable]
fn f(xs: &[Tensor<f64>]) -> Tensor<f64> {
    xs[0].sum()
}

fn main() {}
