use rune_ad::prelude::*;

#[differentiable]
fn f(xs: &[Tensor<f64>]) -> Tensor<f64> {
    let last = xs.iter().last();
    last.map(|x| x.sum()).unwrap_or_else(|| Tensor::scalar(0.0))
}

fn main() {}
