use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f32>) -> Tensor<f32> {
    let y = x.exp() as Tensor<f64>;
    x.exp()
}

fn main() {}
