use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let mut total = x.sum() * 0.0;
    'a: {
        total += (x * x).sum();
        if total.item() > 100.0 {
            break 'a;
        }
    }
    total
}

fn main() {}
