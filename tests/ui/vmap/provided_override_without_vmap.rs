// A trait's provided method under `vmap` batches the trait's body; an impl overriding it without
// `vmap` would leave that batched body in place of its own, so it is a compile error at the
// method.
use rune_ad::prelude::*;

#[differentiable]
trait Block {
    #[differentiable(vmap)]
    fn mix(&self, x: &Tensor<f64>) -> Tensor<f64>;

    #[differentiable(vmap)]
    fn residual(&self, x: &Tensor<f64>) -> Tensor<f64> {
        self.mix(x) + x
    }
}

#[derive(Clone, Differentiable)]
struct Gate {
    g: Tensor<f64>,
}

#[differentiable]
impl Block for Gate {
    #[differentiable(vmap)]
    fn mix(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x * &self.g
    }

    fn residual(&self, x: &Tensor<f64>) -> Tensor<f64> {
        self.mix(x).tanh()
    }
}

fn main() {}
