use rune_ad::prelude::*;

struct Model;

impl Model {
    #[differentiable]
    fn f(&self, x: &Tensor<f64>) -> Tensor<f64> {
        x.exp()
    }
}

fn main() {}
