use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Leaky {
    w: Tensor<f64>,
    #[nodiff]
    slope: f64,
}

#[differentiable]
fn leaky(model: &Leaky, x: &Tensor<f64>) -> Tensor<f64> {
    let z = x * &model.w;
    z.maximum(&(&z * model.slope)).sum()
}

fn main() {}
