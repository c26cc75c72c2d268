// A model's gradient returned by a call inside a differentiated function is read by its parts
// (`gm.w`) or bound to `_`: a name bound to it and never read by a part is an error at the call,
// which says so.
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
