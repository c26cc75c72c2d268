// A trait that declares a method under `vmap` needs each impl's method under `vmap` too: an
// impl without it lacks the batched twin the trait declares, and the error names it.
use rune_ad::prelude::*;

#[differentiable]
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
    fn forward(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x.matmul(&self.w)
    }
}

fn main() {}
