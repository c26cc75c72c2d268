use rune_ad::prelude::*;

struct Activations;

impl Activations {
    #[differentiable]
    fn gelu(x: &Tensor<f64>) -> Tensor<f64> {
        x * &x.sigmoid()
    }
}

fn main() {}
