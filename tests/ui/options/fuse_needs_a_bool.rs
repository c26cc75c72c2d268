use rune_ad::prelude::*;

#[differentiable(fuse = "no")]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    (x.exp() * 2.0).sum()
}

fn main() {}
