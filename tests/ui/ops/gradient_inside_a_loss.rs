// A gradient called inside a differentiated function (a WGAN-GP gradient penalty), of a function
// without `_hvp`, says what makes it differentiable.
use rune_ad::prelude::*;

#[differentiable]
fn critic(w: &Tensor<f64>, x: &Tensor<f64>) -> Tensor<f64> {
    x.matmul(w).tanh().sum()
}

#[differentiable]
fn penalty(w: &Tensor<f64>, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    let (_, gx) = critic_grad(w, x);
    (gx.square().sum().sqrt() - 1.0).square()
}

fn main() {}
