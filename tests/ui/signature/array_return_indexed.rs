use rune_ad::prelude::*;

#[differentiable]
fn rhs(x: f64, y: f64) -> [f64; 2] {
    [x * y, x - y]
}

#[differentiable]
fn step(x: f64, y: f64) -> f64 {
    let d = rhs(x, y);
    d[0] + d[1]
}

fn main() {}
