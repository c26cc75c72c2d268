use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let values = x.to_vec();
    Tensor::from_vec(values, &[2])
}

fn main() {}
