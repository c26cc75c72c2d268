use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let copies = vec![x.clone(), x.clone()];
    x * copies.len() as f64
}

fn main() {}
