use rune_ad::prelude::*;

fn rule(x: [f64; 2], cotangent: &f64) -> [f64; 2] {
    [x[1] * cotangent, x[0] * cotangent]
}

fn tangent(x: [f64; 2], t: [f64; 2]) -> f64 {
    x[1] * t[0] + x[0] * t[1]
}

#[differentiable(custom_vjp = rule, custom_jvp = tangent)]
fn product(x: [f64; 2]) -> f64 {
    x[0] * x[1]
}

fn main() {}
