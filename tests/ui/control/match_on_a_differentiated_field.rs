// A `match` may inspect a `#[nodiff]` field of a structure parameter, not a differentiated one.
use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Layer {
    w: Tensor<f64>,
}

#[differentiable]
fn f(layer: &Layer) -> Tensor<f64> {
    match layer.w {
        ref w => w.sum(),
    }
}

fn main() {}
