use rune_ad::prelude::*;

const N: usize = 3;

#[differentiable]
fn spread(x: f64) -> [f64; N] {
    [x, 2.0 * x, 3.0 * x]
}

fn main() {}
