//! Generated code is hygienic: it compiles without warnings in a module that shadows the names it
//! could otherwise rely on (`Result`, `Option`, `Vec`, `Box`, `Clone`, `Tensor`, `Element`, `core`,
//! `std`, `rune_ad`, common macros), and the user's own names do not collide with its locals.
#![deny(warnings)]

mod m {
    //! Differentiable functions next to shadowing dummies; the real tensor type is reached through
    //! the path `rt::Tensor`.

    use ::rune_ad as rt;
    use ::rune_ad::prelude::differentiable;
    use ::rune_ad::{concat, stop_gradient, where_cond};

    #[allow(dead_code)]
    pub struct Tensor;
    #[allow(dead_code)]
    pub struct Result;
    #[allow(dead_code)]
    pub struct Option;
    #[allow(dead_code)]
    pub struct Vec;
    #[allow(dead_code)]
    pub struct Box;
    #[allow(dead_code)]
    pub struct String;
    #[allow(dead_code)]
    pub struct Some;
    #[allow(dead_code)]
    pub struct None;
    #[allow(dead_code)]
    pub trait Clone {}
    #[allow(dead_code)]
    pub trait Copy {}
    #[allow(dead_code)]
    pub trait Fn {}
    #[allow(dead_code)]
    pub trait FnOnce {}
    #[allow(dead_code)]
    pub trait Iterator {}
    #[allow(dead_code)]
    pub trait Default {}
    #[allow(dead_code)]
    pub trait Into<X> {}
    #[allow(dead_code)]
    pub trait Element {}
    #[allow(dead_code)]
    pub mod core {}
    #[allow(dead_code)]
    pub mod std {}
    #[allow(dead_code)]
    pub mod rune_ad {}
    #[allow(dead_code)]
    pub fn drop() {}
    #[allow(dead_code)]
    pub fn add() {}
    #[allow(dead_code)]
    pub fn accumulate() {}
    #[allow(unused_macros)]
    macro_rules! unreachable {
        ($($t:tt)*) => {
            compile_error!("generated code used a bare `unreachable!`")
        };
    }
    #[allow(unused_macros)]
    macro_rules! panic {
        ($($t:tt)*) => {
            compile_error!("generated code used a bare `panic!`")
        };
    }
    #[allow(unused_macros)]
    macro_rules! vec {
        ($($t:tt)*) => {
            compile_error!("generated code used a bare `vec!`")
        };
    }

    /// A generic function with a where clause, constants and names like the generated locals.
    #[differentiable]
    pub fn generic<T>(
        x: &rt::Tensor<T>,
        y: rt::Tensor<T>,
        #[nodiff] c: &rt::Tensor<T>,
        k: usize,
    ) -> rt::Tensor<T>
    where
        T: rt::Element,
    {
        let __rune_v0 = x * &y;
        let __rune_g = T::from_f64(k as f64);
        let pullback = __rune_v0.exp() * __rune_g + c;
        let mut value = pullback.sum_axes(&[-1], false);
        value *= T::from_f64(0.5);
        value.sum()
    }

    /// A concrete function with a crate-visible tuple output.
    #[differentiable]
    pub(crate) fn pair(
        x: &rt::Tensor<f64>,
        w: &rt::Tensor<f64>,
    ) -> (rt::Tensor<f64>, rt::Tensor<f64>) {
        let h = x.matmul(w).tanh();
        (h.sum(), h)
    }

    /// A function calling the others, with op functions.
    #[differentiable]
    pub fn caller(x: &rt::Tensor<f64>, w: rt::Tensor<f64>) -> rt::Tensor<f64> {
        let (s, h) = pair(&x.clone(), &w);
        let both = concat(&[&h, &h.exp()], 0);
        let safe = where_cond(&both.gt(0.0), &both.ln(), &both);
        let g = generic(&safe, w.sum(), &rt::Tensor::zeros(&[1]), 2);
        s + g
    }

    /// An auxiliary output.
    #[differentiable(has_aux)]
    pub fn with_aux(x: &rt::Tensor<f32>) -> (rt::Tensor<f32>, rt::Tensor<f32>) {
        let y = x.square();
        (y.mean(), y)
    }

    /// A private function whose every generated entry point is used.
    #[differentiable]
    fn private(x: &rt::Tensor<f64>) -> rt::Tensor<f64> {
        (stop_gradient(x) - x.sin()).sum()
    }

    pub fn use_private(x: &rt::Tensor<f64>) -> [rt::Tensor<f64>; 5] {
        let (v, g) = private_value_and_grad(x);
        let (_, t) = private_jvp(x, x);
        let (_, g2) = private_vjp(x, &rt::Tensor::scalar(1.0));
        [v, g, t, g2, private_grad(x) + private(x)]
    }

    #[differentiable]
    pub fn named_cotangent(cotangent: &rt::Tensor<f64>) -> rt::Tensor<f64> {
        cotangent.sum()
    }

    #[differentiable]
    pub fn named_tangent(x: &rt::Tensor<f64>, x_tangent: &rt::Tensor<f64>) -> rt::Tensor<f64> {
        (x * x_tangent).sum()
    }

    #[differentiable]
    fn only_its_gradient_is_used(x: &rt::Tensor<f64>) -> rt::Tensor<f64> {
        x.sum()
    }
    pub fn use_only_gradient(x: &rt::Tensor<f64>) -> rt::Tensor<f64> {
        only_its_gradient_is_used_grad(x)
    }
}

use rune_ad::prelude::*;

fn t(values: &[f64], shape: &[usize]) -> Tensor<f64> {
    Tensor::from_vec(values.to_vec(), shape)
}

#[test]
fn generated_code_works_next_to_shadowing_names() {
    let x = t(&[0.1, -0.2, 0.3, 0.4, 0.5, -0.6], &[2, 3]);
    let y = t(&[0.7, 0.2, -0.1], &[3]);
    let c = t(&[1.0, 2.0, 3.0], &[3]);

    // generic = Σ_rows 0.5 Σ_cols (k e^{x y} + c); d/dx = 0.5 k y e^{x y}, d/dy = Σ_rows 0.5 k x e^{x y}.
    let k = 2.0;
    let (v, (gx, gy)) = m::generic_value_and_grad(&x, y.clone(), &c, 2);
    let (xs, ys) = (x.to_vec(), y.to_vec());
    let mut value = 0.0;
    let mut want_y = [0.0; 3];
    for (i, &xv) in xs.iter().enumerate() {
        let e = (xv * ys[i % 3]).exp();
        value += 0.5 * (k * e + c.to_vec()[i % 3]);
        let want_x = 0.5 * k * ys[i % 3] * e;
        assert!((gx.to_vec()[i] - want_x).abs() < 1e-12);
        want_y[i % 3] += 0.5 * k * xv * e;
    }
    assert!((v.item() - value).abs() < 1e-12);
    assert_eq!(v.to_vec(), m::generic(&x, y.clone(), &c, 2).to_vec());
    for (g, w) in gy.to_vec().iter().zip(want_y) {
        assert!((g - w).abs() < 1e-12);
    }

    // The composite, against finite differences.
    let w = t(&[0.3, -0.5, 0.8, 0.1, 0.4, -0.2], &[3, 2]);
    let f = grad_fn(
        |a: &[Tensor<f64>]| m::caller(&a[0], a[1].clone()),
        |a: &[Tensor<f64>], t: &[Tensor<f64>]| m::caller_jvp(&a[0], a[1].clone(), &t[0], &t[1]).1,
        |a: &[Tensor<f64>], g: &Tensor<f64>| {
            let (dx, dw) = m::caller_vjp(&a[0], a[1].clone(), g).1;
            vec![dx, dw]
        },
    );
    check_grad(&f, &[x.clone(), w.clone()], 1e-5, 1e-5, 1e-5).unwrap();
    let (dx, dw) = m::caller_grad(&x, w.clone());
    assert_eq!((dx.shape(), dw.shape()), (&[2, 3][..], &[3, 2][..]));
    assert_eq!(m::caller(&x, w.clone()).shape(), &[] as &[usize]);

    let ((s, h), (gx, gw)) = m::pair_vjp(&x, &w, (&Tensor::scalar(1.0), &Tensor::zeros(&[2, 2])));
    assert_eq!(
        (s.shape(), h.shape(), gx.shape(), gw.shape()),
        (&[][..], &[2, 2][..], &[2, 3][..], &[3, 2][..])
    );
    let ((_, y2), g) = m::with_aux_value_and_grad(&x.cast::<f32>());
    assert_eq!((y2.shape(), g.shape()), (&[2, 3][..], &[2, 3][..]));
    let (value, _) = m::with_aux(&x.cast::<f32>());
    let ((_, _), tangent) = m::with_aux_jvp(&x.cast::<f32>(), &Tensor::ones(&[2, 3]));
    assert_eq!((value.shape(), tangent.shape()), (&[][..], &[][..]));

    // private = Σ (x - sin x) with the first x stopped: the gradient is -cos x.
    let [v, g, t, g2, sum] = m::use_private(&x);
    let value: f64 = xs.iter().map(|a| a - a.sin()).sum();
    assert!((v.item() - value).abs() < 1e-12);
    let tangent: f64 = xs.iter().map(|a| -a.cos() * a).sum();
    assert!((t.item() - tangent).abs() < 1e-12);
    for (i, &xv) in xs.iter().enumerate() {
        assert!((g.to_vec()[i] + xv.cos()).abs() < 1e-12);
        assert_eq!(g.to_vec()[i], g2.to_vec()[i]);
        assert!((sum.to_vec()[i] + xv.cos() - value).abs() < 1e-12);
    }
}

#[test]
fn user_names_do_not_collide_with_generated_parameters() {
    let x = t(&[1.0, -2.0], &[2]);
    let w = t(&[3.0, 4.0], &[2]);
    // Σ cotangent: the pulled-back cotangent 2 lands on every element.
    let (_, g) = m::named_cotangent_vjp(&x, &Tensor::scalar(2.0));
    assert_eq!(g.to_vec(), vec![2.0, 2.0]);
    // Σ x · x_tangent along (1, 1) for x and (0, 1) for x_tangent: Σ x_tangent + Σ x · (0, 1).
    let (_, t_out) = m::named_tangent_jvp(&x, &w, &t(&[1.0, 1.0], &[2]), &t(&[0.0, 1.0], &[2]));
    assert_eq!(t_out.item(), 3.0 + 4.0 - 2.0);
    assert_eq!(m::use_only_gradient(&x).to_vec(), vec![1.0, 1.0]);
}
