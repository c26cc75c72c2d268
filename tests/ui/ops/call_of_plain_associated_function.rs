use rune_ad::prelude::*;

struct Activations;

impl Activations {
    fn gelu(x: &Tensor<f64>) -> Tensor<f64> {
        x * &x.sigmoid()
    }
}

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    Activations::gelu(x).sum()
}

fn main() {}
