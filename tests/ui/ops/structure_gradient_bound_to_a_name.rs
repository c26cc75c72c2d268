// A model's gradient returned by a call inside a differentiated function can only be discarded:
// a name bound to it is an error at the call, which says to bind it to `_`.
use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
pub struct Critic<T: Element> {
    w: Tensor<T>,
}

#[differentiable]
fn critic<T: Element>(model: &Critic<T>, x: &Tensor<T>) -> Tensor<T> {
    x.matmul(&model.w).tanh().sum()
}

#[differentiable]
fn penalty<T: Element>(model: &Critic<T>, #[nodiff] x: &Tensor<T>) -> Tensor<T> {
    let (gm, gx) = critic_grad(model, x);
    gx.square().sum()
}

fn main() {}
