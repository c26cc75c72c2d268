use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Linear {
    w: Tensor<f64>,
}

#[differentiable]
fn scaled(layer: &Linear) -> Linear {
    Linear { w: &layer.w * 2.0 }
}

fn main() {}
