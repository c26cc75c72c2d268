use rune_ad::prelude::*;

#[differentiable(vmap)]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let n = x.len() as f64;
    x.sum() / n
}

fn main() {}
