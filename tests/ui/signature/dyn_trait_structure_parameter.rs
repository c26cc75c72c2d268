use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
pub struct Context {
    k: Tensor<f64>,
}

#[differentiable(dyn)]
pub trait Attend {
    fn attend(&self, x: &Tensor<f64>, context: &Context) -> Tensor<f64>;
}

fn main() {}
