//! `polyval`: values against the polynomial written out, the error for coefficients that are
//! not a vector, and gradient cases (a 2-D and a strided set of points, more points than one
//! block, a constant polynomial).

use rune_runtime::__private::rules::*;
use rune_runtime::{polyval, try_polyval, Element, Tensor};

use crate::common::{assert_close, tensor, uniform, Case};

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    // (label, coefficients, points).
    let inputs: [(&'static str, Tensor<T>, Tensor<T>); 5] = [
        (
            "[5] at [7]",
            uniform(&[5], -1.0, 1.0, 9110),
            uniform(&[7], -1.5, 1.5, 9100),
        ),
        (
            "[5] at [2, 3]",
            uniform(&[5], -1.0, 1.0, 9110),
            uniform(&[2, 3], -1.5, 1.5, 9101),
        ),
        (
            "[5] at a transposed [3, 4]",
            uniform(&[5], -1.0, 1.0, 9110),
            uniform::<T>(&[4, 3], -1.5, 1.5, 9102).t(),
        ),
        (
            "[5] at [300], two blocks",
            uniform(&[5], -1.0, 1.0, 9110),
            uniform(&[300], -1.1, 1.1, 9103),
        ),
        (
            "a constant",
            uniform(&[1], -1.0, 1.0, 9111),
            uniform(&[4], -1.0, 1.0, 9112),
        ),
    ];
    for (label, p, x) in inputs {
        cases.push(Case::new(
            "polyval",
            label,
            vec![p, x],
            |a| polyval(&a[0], &a[1]),
            |a, t| polyval_jvp(&a[0], &a[1], Some(&t[0]), Some(&t[1])),
            |a, g| {
                vec![
                    polyval_vjp_p(g, &a[0], &a[1]),
                    polyval_vjp_x(g, &a[0], &a[1]),
                ]
            },
        ));
    }
    cases
}

#[test]
fn polyval_is_the_polynomial_written_out() {
    fn check<T: Element>() {
        // 2x³ − x² + 0.5x + 3 at −1, 0, 0.5, 2.
        let p = tensor::<T>(&[2.0, -1.0, 0.5, 3.0], &[4]);
        let x = tensor::<T>(&[-1.0, 0.0, 0.5, 2.0], &[2, 2]);
        let y = polyval(&p, &x);
        assert_eq!(y.shape(), &[2, 2]);
        assert_close(&y, &[-0.5, 3.0, 3.25, 16.0], 1e-6);
        // The derivative 6x² − 2x + 0.5, and the powers x³, x², x, 1 summed over the points.
        let ones = Tensor::<T>::ones(&[2, 2]);
        assert_close(&polyval_vjp_x(&ones, &p, &x), &[8.5, 0.5, 1.0, 20.5], 1e-6);
        assert_close(
            &polyval_vjp_p(&ones, &p, &x),
            &[-1.0 + 0.125 + 8.0, 1.0 + 0.25 + 4.0, -1.0 + 0.5 + 2.0, 4.0],
            1e-6,
        );
    }
    check::<f32>();
    check::<f64>();
    let err = try_polyval(&Tensor::<f64>::ones(&[2, 2]), &Tensor::ones(&[3]))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("polyval:") && err.contains("[2, 2]") && err.contains("[3]"),
        "{err}"
    );
}
