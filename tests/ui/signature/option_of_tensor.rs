use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>, bias: Option<&Tensor<f64>>) -> Tensor<f64> {
    match bias {
        Some(b) => (x + b).sum(),
        None => x.sum(),
    }
}

fn main() {}
