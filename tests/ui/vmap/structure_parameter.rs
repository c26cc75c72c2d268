use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Linear {
    w: Tensor<f64>,
}

#[differentiable(vmap)]
fn f(m: &Linear, #[nodiff] x: &Tensor<f64>) -> Tensor<f64> {
    x.matmul(&m.w).sum()
}

fn main() {}
