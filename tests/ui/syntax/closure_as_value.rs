use rune_ad::prelude::*;

fn apply(f: impl Fn(&Tensor<f64>) -> Tensor<f64>, x: &Tensor<f64>) -> Tensor<f64> {
    f(x)
}

#[differentiable]
fn f(x: &Tensor<f64>, w: &Tensor<f64>) -> Tensor<f64> {
    let scaled = |t: &Tensor<f64>| t * w;
    apply(scaled, x).sum()
}

fn main() {}
