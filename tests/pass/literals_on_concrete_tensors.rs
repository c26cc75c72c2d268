//! Unsuffixed literals beside tensors of a concrete element type need no annotation, and the
//! result's methods chain at once: the same source for `f32`, `f64` and `Dual<f64>`, in plain
//! code and through `#[differentiable]`.
use rune_ad::prelude::*;

macro_rules! literal_forms {
    ($name:ident, $elem:ty) => {
        fn $name(x: &Tensor<$elem>, k: $elem) -> Tensor<$elem> {
            let a = (x.exp() + 1.0).ln();
            let b = (2.0 * x).tanh() + (1.0 - x).abs() + (1.0 / (x.square() + 1.0)).sqrt();
            let c = (x / 3.0).sin() + x.powf(2.0).cos() + x.powf(k).exp();
            let d = x.maximum(0.0).exp() + x.minimum(1.5).exp() + x.clamp(-1.0, 1.0).exp();
            let m = x.gt(0.0);
            let e = where_cond(&m, x, &0.0).exp() + where_cond(&x.le(k), &1.0, x).exp();
            let mut f = (x * k).exp() + (&x.exp() - k).exp();
            f += 1.0;
            f *= k;
            (a + b + c + d + e + f).sum()
        }
    };
}
literal_forms!(forms_f32, f32);
literal_forms!(forms_f64, f64);
literal_forms!(forms_dual, Dual<f64>);

#[differentiable]
fn loss_f32(x: &Tensor<f32>, #[nodiff] k: f32) -> Tensor<f32> {
    let h = (x.exp() + 1.0).ln() * 0.5 - 1.0 / (x.square() + 1.0) + (2.0 * x).tanh();
    let capped = h.clamp(-1.0, 1.0).powf(2.0) + h.maximum(0.0) + where_cond(&h.gt(0.0), &h, &0.0);
    ((capped * k).exp() + 1.0).sum()
}

#[differentiable(hvp)]
fn loss_f64(x: &Tensor<f64>) -> Tensor<f64> {
    let h = (x.exp() + 1.0).ln() * 0.5 - 1.0 / (x.square() + 1.0) + (2.0 * x).tanh();
    let positive = where_cond(&x.gt(0.0), &1.0, &0.0);
    ((h.powf(2.0) * positive).exp() + 1.0).sum()
}

fn main() {
    let x = Tensor::<f64>::from_vec(vec![0.5, -1.0], &[2]);
    let _ = forms_f64(&x, 2.0);
    let _ = forms_f32(&x.cast(), 2.0);
    let _ = forms_dual(&x.cast(), Dual::constant(2.0));
    let _ = loss_f32_grad(&x.cast(), 0.5);
    let _ = loss_f64_hvp(&x, &x);
    // A literal on its own still defaults to `f64`.
    let t = Tensor::scalar(1.5);
    let _: f64 = t.item();
}
