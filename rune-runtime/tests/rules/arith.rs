//! `+ - * /` and negation, with every broadcasting and scalar combination.

use rune_runtime::__private::rules::*;
use rune_runtime::{add, div, mul, sub, Element, Tensor};

use crate::common::{assert_close, tensor, uniform, Case};

/// Binary cases for the shape pairs that matter: equal, broadcast on either side, rank
/// differing, and a 0-d operand.
const SHAPES: &[(&[usize], &[usize])] = &[
    (&[2, 3], &[2, 3]),
    (&[2, 3], &[3]),
    (&[1, 3], &[2, 1]),
    (&[4, 1, 3], &[2, 3]),
    (&[], &[2, 2]),
];

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    for (i, &(sa, sb)) in SHAPES.iter().enumerate() {
        let a = uniform::<T>(sa, -2.0, 2.0, 100 + i as u64);
        // Divisors away from zero keep the finite differences well conditioned.
        let b = uniform::<T>(sb, 0.5, 2.0, 200 + i as u64);
        let args = vec![a, b];
        cases.push(Case::new(
            "add",
            "tensor + tensor",
            args.clone(),
            |x| add(&x[0], &x[1]),
            |x, t| add_jvp(&add(&x[0], &x[1]), Some(&t[0]), Some(&t[1])),
            |x, g| vec![add_vjp_lhs(g, x[0].shape()), add_vjp_rhs(g, x[1].shape())],
        ));
        cases.push(Case::new(
            "sub",
            "tensor - tensor",
            args.clone(),
            |x| &x[0] - &x[1],
            |x, t| sub_jvp(&sub(&x[0], &x[1]), Some(&t[0]), Some(&t[1])),
            |x, g| vec![sub_vjp_lhs(g, x[0].shape()), sub_vjp_rhs(g, x[1].shape())],
        ));
        cases.push(Case::new(
            "mul",
            "tensor * tensor",
            args.clone(),
            |x| &x[0] * &x[1],
            |x, t| mul_jvp(&x[0], &x[1], &mul(&x[0], &x[1]), Some(&t[0]), Some(&t[1])),
            |x, g| {
                vec![
                    mul_vjp_lhs(g, x[0].shape(), &x[1]),
                    mul_vjp_rhs(g, &x[0], x[1].shape()),
                ]
            },
        ));
        cases.push(Case::new(
            "div",
            "tensor / tensor",
            args.clone(),
            |x| &x[0] / &x[1],
            |x, t| div_jvp(&x[1], &div(&x[0], &x[1]), Some(&t[0]), Some(&t[1])),
            |x, g| {
                let y = div(&x[0], &x[1]);
                vec![
                    div_vjp_lhs(g, x[0].shape(), &x[1]),
                    div_vjp_rhs(g, &x[1], &y),
                ]
            },
        ));
    }
    let x = vec![uniform::<T>(&[3, 2], -2.0, 2.0, 300)];
    let s = T::from_f64(1.5);
    cases.push(Case::new(
        "mul",
        "scalar * tensor",
        x.clone(),
        move |x| mul(&s, &x[0]),
        move |x, t| mul_jvp(&s, &x[0], &(mul(&s, &x[0])), None, Some(&t[0])),
        move |x, g| vec![mul_vjp_rhs(g, &s, x[0].shape())],
    ));
    cases.push(Case::new(
        "div",
        "scalar / tensor",
        vec![uniform::<T>(&[3, 2], 0.5, 2.0, 301)],
        move |x| div(&s, &x[0]),
        move |x, t| div_jvp(&x[0], &(div(&s, &x[0])), None, Some(&t[0])),
        move |x, g| vec![div_vjp_rhs(g, &x[0], &(div(&s, &x[0])))],
    ));
    cases.push(Case::new(
        "div",
        "tensor / scalar",
        x.clone(),
        move |x| &x[0] / s,
        move |x, t| div_jvp(&s, &(&x[0] / s), Some(&t[0]), None),
        move |x, g| vec![div_vjp_lhs(g, x[0].shape(), &s)],
    ));
    cases.push(Case::new(
        "sub",
        "scalar - tensor",
        x.clone(),
        move |x| sub(&s, &x[0]),
        move |x, t| sub_jvp(&(sub(&s, &x[0])), None, Some(&t[0])),
        move |x, g| vec![sub_vjp_rhs(g, x[0].shape())],
    ));
    cases.push(Case::new(
        "add",
        "tensor + constant tensor of larger shape",
        vec![uniform::<T>(&[3], -1.0, 1.0, 302)],
        |x| &x[0] + &Tensor::<T>::ones(&[2, 3]),
        |x, t| add_jvp(&(&x[0] + &Tensor::<T>::ones(&[2, 3])), Some(&t[0]), None),
        |x, g| vec![add_vjp_lhs(g, x[0].shape())],
    ));
    cases.push(Case::new(
        "neg",
        "-x",
        x,
        |x| -&x[0],
        |_, t| neg_jvp(&t[0]),
        |_, g| vec![neg_vjp(g)],
    ));
    cases
}

#[test]
fn operators_cover_owned_borrowed_and_scalar_operands() {
    let a = tensor::<f64>(&[1.0, 2.0], &[2]);
    let b = tensor::<f64>(&[10.0, 20.0], &[2]);
    assert_close(&(&a + &b), &[11.0, 22.0], 0.0);
    assert_close(&(a.clone() + &b), &[11.0, 22.0], 0.0);
    assert_close(&(&a + b.clone()), &[11.0, 22.0], 0.0);
    assert_close(&(a.clone() - b.clone()), &[-9.0, -18.0], 0.0);
    assert_close(&(&a * 2.0), &[2.0, 4.0], 0.0);
    assert_close(&(2.0 * &a), &[2.0, 4.0], 0.0);
    assert_close(&(1.0 - a.clone()), &[0.0, -1.0], 0.0);
    assert_close(&(4.0 / &a), &[4.0, 2.0], 0.0);
    assert_close(&(-&a), &[-1.0, -2.0], 0.0);
    let mut c = a.clone();
    c += &b;
    c -= 1.0;
    c *= 2.0;
    c /= &tensor::<f64>(&[2.0], &[1]);
    assert_close(&c, &[10.0, 21.0], 0.0);
    assert_close(&a, &[1.0, 2.0], 0.0); // copy-on-write left the shared original alone
}

fn generic_affine<T: Element>(x: &Tensor<T>, s: T) -> Tensor<T> {
    x * s + s
}

/// An unsuffixed literal takes the tensor's element type, on either side: no other impl's
/// scalar type is a float for a `Tensor<f32>`, even with the `Tensor<Dual<f32>> (op) f32` impls.
#[test]
fn literals_take_the_element_type() {
    let x = tensor::<f32>(&[1.0, 2.0], &[2]);
    let y = 2.0 * &(&x * 2.0 - 1.0) / 2.0;
    let _: &Tensor<f32> = &y;
    assert_close(&y, &[1.0, 3.0], 0.0);
}

#[test]
fn operators_work_in_generic_code() {
    let x = tensor::<f32>(&[1.0, 2.0], &[2]);
    assert_close(&generic_affine(&x, 3.0f32), &[6.0, 9.0], 0.0);
}

#[test]
fn broadcasting_mismatch_names_op_and_shapes() {
    let a = Tensor::<f64>::zeros(&[2, 3]);
    let b = Tensor::<f64>::zeros(&[4]);
    let err = rune_runtime::try_mul(&a, &b).unwrap_err();
    assert_eq!(err.op(), "mul");
    assert!(
        err.to_string().contains("[2, 3]") && err.to_string().contains("[4]"),
        "{err}"
    );
    let panic = std::panic::catch_unwind(|| &a + &b).unwrap_err();
    let msg = panic.downcast_ref::<String>().unwrap();
    assert!(msg.starts_with("add:") && msg.contains("[2, 3]"), "{msg}");
}

/// A zero cotangent through `a / b` at `b = 0` gives zero, not NaN.
#[test]
fn zero_cotangent_is_a_strong_zero() {
    let g = tensor::<f64>(&[0.0, 1.0], &[2]);
    let b = tensor::<f64>(&[0.0, 2.0], &[2]);
    let ga = div_vjp_lhs(&g, &[2], &b);
    assert_close(&ga, &[0.0, 0.5], 0.0);
}
