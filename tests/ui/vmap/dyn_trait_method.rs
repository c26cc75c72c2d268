// `vmap` on a method of a trait under `dyn`: a `Box<dyn Layer>` would have no batched twin to
// call, so the error is at the method, and says what to batch through instead.
use rune_ad::prelude::*;

#[differentiable(dyn)]
pub trait Layer {
    #[differentiable(vmap)]
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64>;
}

#[derive(Clone, Differentiable)]
pub struct Dense {
    w: Tensor<f64>,
}

#[differentiable]
impl Layer for Dense {
    #[differentiable(vmap)]
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x.matmul(&self.w)
    }
}

fn main() {}
