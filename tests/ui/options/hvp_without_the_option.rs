use rune_ad::prelude::*;

#[differentiable]
fn energy(x: &Tensor<f64>) -> Tensor<f64> {
    (x * x * x).sum()
}

fn main() {
    let x = Tensor::from_vec(vec![1.0, 2.0], &[2]);
    let v = Tensor::ones(&[2]);
    let _ = energy_hvp(&x, &v);
}
