use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Linear {
    w: Tensor<f64>,
}

#[differentiable]
fn f(x: &Tensor<f64>, head: Option<&Linear>) -> Tensor<f64> {
    x.sum()
}

fn main() {}
