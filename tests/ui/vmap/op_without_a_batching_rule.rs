use rune_ad::prelude::*;

#[differentiable(vmap)]
fn f(x: &Tensor<f32>, w: &Tensor<f32>) -> Tensor<f32> {
    x.conv2d(w, 1, 1).sum()
}

fn main() {}
