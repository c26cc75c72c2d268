use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    match x.exp() {
        _ => x.sin(),
    }
}

fn main() {}
