use rune_ad::prelude::*;

#[differentiable]
pub fn f(w: &Tensor<f32>, b: &Tensor<f32>, #[nodiff] x: &Tensor<f32>) -> Tensor<f32> {
    let z = x.matmul(w) + b;
    let d = z.tanh() * 2.0 - 1.0;
    &d * &d
}

#[differentiable]
fn g<T: Element>(a: &Tensor<T>, s: T) -> (Tensor<T>, Tensor<T>) {
    let e = a.exp();
    let mut acc = a * s;
    acc += &e;
    acc = -acc;
    (acc, e.sin())
}

#[differentiable]
fn h(a: Tensor<f64>) -> Tensor<f64> {
    let (p, q) = g(&a, 2.0);
    let (_, r) = g(&p, 3.0);
    p * q + r
}

#[test]
fn runs() {
    let w = Tensor::<f32>::rand_uniform(&[3, 2], -1.0, 1.0, 1);
    let b = Tensor::<f32>::rand_uniform(&[2], -1.0, 1.0, 2);
    let x = Tensor::<f32>::rand_uniform(&[4, 3], -1.0, 1.0, 3);
    let ct = Tensor::<f32>::ones(&[4, 2]);
    let (v, (gw, gb)) = f_vjp(&w, &b, &x, &ct);
    assert_eq!(v, f(&w, &b, &x));
    assert_eq!(gw.shape(), &[3, 2]);
    assert_eq!(gb.shape(), &[2]);
    let (_, t) = f_jvp(&w, &b, &x, &w, &b);
    assert_eq!(t.shape(), &[4, 2]);
    let a = Tensor::<f64>::rand_uniform(&[3], -1.0, 1.0, 5);
    let (v, ga) = h_vjp(a.clone(), &Tensor::ones(&[3]));
    println!("{v:?} {ga:?}");
}
