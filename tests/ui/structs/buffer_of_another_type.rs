// A `#[buffer]` is a tensor of the structure's element type, saved beside its leaves; a buffer
// of another type is an error at the field.
use rune_ad::prelude::*;

#[derive(Clone, Differentiable)]
struct Counter {
    w: Tensor<f32>,
    #[buffer]
    steps: Tensor<i64>,
}

fn main() {}
