use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let mut y = x.clone();
    'outer: for _ in 0..3 {
        y = y * 2.0;
        break 'outer;
    }
    y
}

fn main() {}
