use rune_ad::prelude::*;

#[differentiable]
fn square(a: f64) -> f64 {
    a * a
}

#[differentiable]
fn f(x: f64) -> f64 {
    square(x) + x
}

fn main() {}
