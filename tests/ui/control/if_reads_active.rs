use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let y = if x.sum().item() > 0.0 { x.exp() } else { x.sin() };
    y
}

fn main() {}
