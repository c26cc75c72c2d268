// A method's gradient called inside a differentiated method, where the attribute is on the
// methods alone: they cannot see the generic `impl` block, so `score` has no `score_hvp`, and
// the error says to put the attribute on the block.
use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
pub struct Critic<T: Element> {
    w: Tensor<T>,
}

impl<T: Element> Critic<T> {
    #[differentiable]
    fn score(&self, x: &Tensor<T>) -> Tensor<T> {
        x.matmul(&self.w).tanh().sum()
    }

    #[differentiable]
    fn penalty(&self, #[nodiff] x: &Tensor<T>) -> Tensor<T> {
        let (_, gx) = self.score_grad(x);
        gx.square().sum()
    }
}

fn main() {}
