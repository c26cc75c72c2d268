use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let mut acc = x.clone();
    for row in x {
        acc = acc + row;
    }
    acc
}

fn main() {}
