use rune_ad::prelude::*;

/// An array of numbers is read element by element; passing it on whole is refused.
#[differentiable]
fn norm(x: &[f64; 3]) -> f64 {
    x[0] * x[0] + x[1] * x[1] + x[2] * x[2]
}

#[differentiable]
fn scaled_norm(x: [f64; 3], s: f64) -> f64 {
    norm(&x) * s
}

fn main() {}
