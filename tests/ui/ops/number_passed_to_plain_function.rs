use rune_ad::prelude::*;

fn clip(v: f64) -> f64 {
    v.max(0.0)
}

fn total(x: &[f64; 2]) -> f64 {
    x[0] + x[1]
}

/// A number or an array of numbers passed to a function that is not #[differentiable]: one
/// error at each call, as for tensors.
#[differentiable]
fn f(x: f64, y: [f64; 2]) -> f64 {
    clip(x) * 2.0 + total(&y)
}

fn main() {}
