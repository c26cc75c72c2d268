use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    if x.sum() {
        x.exp()
    } else {
        x.sin()
    }
}

fn main() {}
