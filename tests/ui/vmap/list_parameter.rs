use rune_ad::prelude::*;

#[differentiable(vmap)]
fn f(layers: &[Tensor<f64>], #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    x.matmul(&layers[0]).sum()
}

fn main() {}
