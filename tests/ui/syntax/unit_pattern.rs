use rune_ad::prelude::*;

#[differentiable]
fn g(x: &Tensor<f64>) -> Tensor<f64> {
    x.exp()
}

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let () = g(x);
    x.sum()
}

fn main() {}
