use rune_ad::prelude::*;

/// An array of numbers is read element by element, or passed whole to a differentiable
/// function; bound to another name as a whole, it is refused.
#[differentiable]
fn scaled_norm(x: [f64; 3], s: f64) -> f64 {
    let y = x;
    (y[0] * y[0] + y[1] * y[1]) * s
}

fn main() {}
