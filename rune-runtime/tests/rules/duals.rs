//! `dual_of`, `tangent_of`, `primal_of`: each case goes through a dual tensor and back, with a
//! nonlinear op on dual numbers between (so forward mode runs inside the checked function).

use rune_runtime::__private::rules::*;
use rune_runtime::{dual_of, primal_of, tangent_of, Element, Tensor};

use crate::common::{uniform, Case};

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let args = || {
        vec![
            uniform::<T>(&[2, 3], -1.0, 1.0, 500),
            uniform::<T>(&[2, 3], -1.0, 1.0, 501),
        ]
    };
    vec![
        // tangent_of(exp(dual_of(a, b))) = b eᵃ.
        Case::new(
            "tangent_of",
            "tangent of exp of a dual tensor",
            args(),
            |x| tangent_of(&dual_of(&x[0], &x[1]).exp()),
            |x, t| {
                let d = dual_of(&x[0], &x[1]);
                let y = d.exp();
                let dd = dual_of_jvp(&d, Some(&t[0]), Some(&t[1]));
                tangent_of_jvp(&exp_jvp(&y, &dd))
            },
            |x, g| {
                let y = dual_of(&x[0], &x[1]).exp();
                let gy = exp_vjp(&tangent_of_vjp(g), &y);
                vec![dual_of_vjp_lhs(&gy), dual_of_vjp_rhs(&gy)]
            },
        ),
        // primal_of(sin(dual_of(a, b))) = sin a.
        Case::new(
            "primal_of",
            "primal of sin of a dual tensor",
            args(),
            |x| primal_of(&dual_of(&x[0], &x[1]).sin()),
            |x, t| {
                let d = dual_of(&x[0], &x[1]);
                let dd = dual_of_jvp(&d, Some(&t[0]), Some(&t[1]));
                primal_of_jvp(&sin_jvp(&d, &dd))
            },
            |x, g| {
                let d = dual_of(&x[0], &x[1]);
                let gd = sin_vjp(&primal_of_vjp(g), &d);
                vec![dual_of_vjp_lhs(&gd), dual_of_vjp_rhs(&gd)]
            },
        ),
        Case::new(
            "dual_of",
            "tangent of a product of dual tensors",
            args(),
            |x| tangent_of(&(dual_of(&x[0], &x[1]) * dual_of(&x[1], &x[0]))),
            |x, t| {
                let (p, q) = (dual_of(&x[0], &x[1]), dual_of(&x[1], &x[0]));
                let y = &p * &q;
                let dp = dual_of_jvp(&p, Some(&t[0]), Some(&t[1]));
                let dq = dual_of_jvp(&q, Some(&t[1]), Some(&t[0]));
                tangent_of_jvp(&mul_jvp(&p, &q, &y, Some(&dp), Some(&dq)))
            },
            |x, g| {
                let (p, q) = (dual_of(&x[0], &x[1]), dual_of(&x[1], &x[0]));
                let gy = tangent_of_vjp(g);
                let gp = mul_vjp_lhs(&gy, p.shape(), &q);
                let gq = mul_vjp_rhs(&gy, &p, q.shape());
                vec![
                    dual_of_vjp_lhs(&gp) + dual_of_vjp_rhs(&gq),
                    dual_of_vjp_rhs(&gp) + dual_of_vjp_lhs(&gq),
                ]
            },
        ),
    ]
}

#[test]
fn dual_of_rejects_different_shapes() {
    let err =
        rune_runtime::try_dual_of(&Tensor::<f64>::zeros(&[2]), &Tensor::zeros(&[3])).unwrap_err();
    assert_eq!(err.op(), "dual_of");
    assert!(err.to_string().contains("[2]") && err.to_string().contains("[3]"));
}
