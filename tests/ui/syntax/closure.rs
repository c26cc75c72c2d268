use rune_ad::prelude::*;

#[differentiable]
fn f(x: &Tensor<f64>) -> Tensor<f64> {
    let act = |t: &Tensor<f64>| {
        if t.ndim() > 3 {
            return t.clone();
        }
        t.tanh()
    };
    act(x).sum()
}

fn main() {}
