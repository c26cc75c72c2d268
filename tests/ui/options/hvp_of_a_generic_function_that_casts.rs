use rune_ad::prelude::*;

#[differentiable]
fn energy<T: Element>(x: &Tensor<T>) -> Tensor<T> {
    x.cast::<f64>().sin().cast::<T>().sum()
}

fn main() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]);
    let v = Tensor::ones(&[2]);
    let _ = energy_grad(&x);
    let _ = energy_hvp(&x, &v);
}
