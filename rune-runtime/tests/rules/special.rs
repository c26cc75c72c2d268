//! `logaddexp`, `xlogy`, `xlog1py`, `atan2`, `hypot` and `powi`: rules against finite
//! differences on broadcasting shape pairs, and hand-derived values where the naive formulas
//! break (equal infinities, `x = 0`, the origin).

use rune_runtime::__private::rules::*;
use rune_runtime::{Element, Tensor};

use crate::common::{assert_close, tensor, uniform, Case};

/// Equal shapes, broadcasting on either side, differing ranks, and a 0-d operand.
const SHAPES: &[(&[usize], &[usize])] = &[
    (&[2, 3], &[2, 3]),
    (&[2, 3], &[3]),
    (&[1, 3], &[2, 1]),
    (&[], &[2, 2]),
];

type Forward<T> = fn(&Tensor<T>, &Tensor<T>) -> Tensor<T>;
type Jvp<T> = fn(&Tensor<T>, &Tensor<T>, Option<&Tensor<T>>, Option<&Tensor<T>>) -> Tensor<T>;
type Vjp<T> = fn(&Tensor<T>, &Tensor<T>, &Tensor<T>) -> Tensor<T>;
/// An op, its rules, and the ranges its two inputs are drawn from.
type Smooth<T> = (
    &'static str,
    Forward<T>,
    Jvp<T>,
    Vjp<T>,
    Vjp<T>,
    (f64, f64),
    (f64, f64),
);

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let ops: [Smooth<T>; 5] = [
        (
            "logaddexp",
            |a, b| a.logaddexp(b),
            logaddexp_jvp,
            logaddexp_vjp_lhs,
            logaddexp_vjp_rhs,
            (-3.0, 3.0),
            (-3.0, 3.0),
        ),
        (
            "xlogy",
            |a, b| a.xlogy(b),
            xlogy_jvp,
            xlogy_vjp_lhs,
            xlogy_vjp_rhs,
            (-2.0, 2.0),
            (0.5, 3.0),
        ),
        (
            "xlog1py",
            |a, b| a.xlog1py(b),
            xlog1py_jvp,
            xlog1py_vjp_lhs,
            xlog1py_vjp_rhs,
            (-2.0, 2.0),
            (-0.5, 2.0),
        ),
        (
            "atan2",
            |a, b| a.atan2(b),
            atan2_jvp,
            atan2_vjp_lhs,
            atan2_vjp_rhs,
            (-2.0, 2.0),
            (0.3, 2.0),
        ),
        (
            "hypot",
            |a, b| a.hypot(b),
            hypot_jvp,
            hypot_vjp_lhs,
            hypot_vjp_rhs,
            (-2.0, 2.0),
            (0.3, 2.0),
        ),
    ];
    let mut cases = Vec::new();
    for (k, (name, f, jvp, vjp_lhs, vjp_rhs, (alo, ahi), (blo, bhi))) in ops.into_iter().enumerate()
    {
        for (i, &(sa, sb)) in SHAPES.iter().enumerate() {
            let seed = 700 + 10 * k as u64 + i as u64;
            let a = uniform::<T>(sa, alo, ahi, seed);
            let b = uniform::<T>(sb, blo, bhi, seed + 100);
            cases.push(Case::new(
                name,
                "broadcasting",
                vec![a, b],
                move |x| f(&x[0], &x[1]),
                move |x, t| jvp(&x[0], &x[1], Some(&t[0]), Some(&t[1])),
                move |x, g| vec![vjp_lhs(g, &x[0], &x[1]), vjp_rhs(g, &x[0], &x[1])],
            ));
        }
    }
    // `atan2` on all four quadrants (the branch cut is the negative x axis: y stays off 0).
    cases.push(Case::new(
        "atan2",
        "four quadrants",
        vec![
            tensor(&[0.7, 0.7, -0.7, -0.7, 1.5, -0.2], &[6]),
            tensor(&[1.2, -1.2, 1.2, -1.2, -0.1, -3.0], &[6]),
        ],
        |x| x[0].atan2(&x[1]),
        |x, t| atan2_jvp(&x[0], &x[1], Some(&t[0]), Some(&t[1])),
        |x, g| {
            vec![
                atan2_vjp_lhs(g, &x[0], &x[1]),
                atan2_vjp_rhs(g, &x[0], &x[1]),
            ]
        },
    ));
    for (label, n) in [("n = 3", 3), ("n = -2", -2), ("n = 1", 1), ("n = 0", 0)] {
        // Negative bases are fine for integer powers; keep |x| >= 0.5 for n < 0.
        let x: Tensor<T> = uniform(&[2, 3], 0.5, 2.0, 790);
        let x = x.map(|&v| if v > T::from_f64(1.2) { -v } else { v });
        cases.push(Case::new(
            "powi",
            label,
            vec![x],
            move |x| x[0].powi(n),
            move |x, t| powi_jvp(&x[0], n, &t[0]),
            move |x, g| vec![powi_vjp(g, &x[0], n)],
        ));
    }
    cases
}

/// `logaddexp` of equal infinities is that infinity (not NaN, which `max + ln(1 + e^-|a-b|)`
/// gives through `inf - inf`), of huge values has no overflow, and splits its gradient evenly
/// at ties.
#[test]
fn logaddexp_is_stable_at_infinities_and_large_values() {
    fn check<T: Element>() {
        let inf = f64::INFINITY;
        let a = tensor::<T>(&[inf, -inf, 1000.0, -1000.0, 0.0, inf, 5.0], &[7]);
        let b = tensor::<T>(&[inf, -inf, 1000.0, -1e4, -inf, 3.0, 5.0], &[7]);
        let ln2 = std::f64::consts::LN_2;
        let y = a.logaddexp(&b).to_vec();
        let want = [inf, -inf, 1000.0 + ln2, -1000.0, 0.0, inf, 5.0 + ln2];
        for (got, want) in y.iter().zip(want) {
            let got = got.to_real();
            assert!(
                got == want || (got - want).abs() <= 1e-6 * want.abs(),
                "{got} vs {want}"
            );
        }
        let g = Tensor::ones(&[7]);
        let (ga, gb) = (logaddexp_vjp_lhs(&g, &a, &b), logaddexp_vjp_rhs(&g, &a, &b));
        assert_close(&ga, &[0.5, 0.5, 0.5, 1.0, 1.0, 1.0, 0.5], 0.0);
        assert_close(&gb, &[0.5, 0.5, 0.5, 0.0, 0.0, 0.0, 0.5], 0.0);
        let t = logaddexp_jvp(&a, &b, Some(&g), Some(&g));
        assert_close(&t, &[1.0; 7], 0.0);
    }
    check::<f32>();
    check::<f64>();
    // logaddexp(0, -40) = ln(1 + e^-40) ≈ e^-40 keeps its relative precision.
    let y = tensor::<f64>(&[0.0], &[1])
        .logaddexp(&tensor(&[-40.0], &[1]))
        .item();
    assert!((y - (-40f64).exp()).abs() <= 1e-15 * y, "{y}");
}

/// `xlogy(0, y) = 0` and `xlog1py(0, y) = 0` for every `y`, including `0`, `-1` and NaN
/// (SciPy's and JAX's definition), with zero `y`-gradient there; elsewhere `x ln y` and its
/// partials `ln y`, `x / y`.
#[test]
fn xlogy_and_xlog1py_are_zero_where_x_is_zero() {
    fn check<T: Element>() {
        let x = tensor::<T>(&[0.0, 0.0, 0.0, 2.0], &[4]);
        let y = tensor::<T>(&[0.0, f64::NAN, 3.0, 4.0], &[4]);
        let g = Tensor::ones(&[4]);
        assert_close(&x.xlogy(&y), &[0.0, 0.0, 0.0, 2.0 * 4f64.ln()], 1e-6);
        let gy = xlogy_vjp_rhs(&g, &x, &y);
        assert_close(&gy, &[0.0, 0.0, 0.0, 0.5], 1e-6);
        let gx = xlogy_vjp_lhs(&g, &x, &y).to_vec();
        assert_eq!(gx[0].to_real(), f64::NEG_INFINITY);
        assert!((gx[3].to_real() - 4f64.ln()).abs() < 1e-6);
        // A zero tangent of x stays zero against ln(0) = -inf (a strong zero).
        let t = xlogy_jvp(&x, &y, Some(&Tensor::zeros(&[4])), None);
        assert_close(&t, &[0.0; 4], 0.0);

        let y1 = tensor::<T>(&[-1.0, f64::NAN, 1.0, 3.0], &[4]);
        assert_close(&x.xlog1py(&y1), &[0.0, 0.0, 0.0, 2.0 * 4f64.ln()], 1e-6);
        assert_close(&xlog1py_vjp_rhs(&g, &x, &y1), &[0.0, 0.0, 0.0, 0.5], 1e-6);
    }
    check::<f32>();
    check::<f64>();
}

/// `atan2` and `hypot` at known points, without overflow at 1e300 (f64) and 1e30 (f32), and
/// with zero partials at the origin.
#[test]
fn atan2_and_hypot_at_known_points_and_large_values() {
    fn check<T: Element>(big: f64) {
        let y = tensor::<T>(&[1.0, 1.0, -1.0, 0.0, 3.0 * big], &[5]);
        let x = tensor::<T>(&[1.0, -1.0, 0.0, 0.0, 4.0 * big], &[5]);
        let pi = std::f64::consts::PI;
        assert_close(
            &y.atan2(&x),
            &[pi / 4.0, 3.0 * pi / 4.0, -pi / 2.0, 0.0, 0.6435011087932844],
            1e-6,
        );
        assert_close(
            &y.hypot(&x),
            &[2f64.sqrt(), 2f64.sqrt(), 1.0, 0.0, 5.0 * big],
            1e-6,
        );
        let g = Tensor::ones(&[5]);
        // ∂atan2/∂y = x / r², ∂atan2/∂x = -y / r²; ∂hypot = (y, x) / r.
        let gy = atan2_vjp_lhs(&g, &y, &x).to_vec();
        let gx = atan2_vjp_rhs(&g, &y, &x).to_vec();
        let want_y = [0.5, -0.5, 0.0, 0.0, 4.0 / 25.0 / big];
        let want_x = [-0.5, -0.5, 1.0, 0.0, -3.0 / 25.0 / big];
        for (got, want) in gy.iter().zip(want_y).chain(gx.iter().zip(want_x)) {
            let got = got.to_real();
            assert!(
                (got - want).abs() <= 1e-6 * want.abs() + 1e-12 * (want == 0.0) as u8 as f64,
                "{got} vs {want}"
            );
        }
        let hy = hypot_vjp_lhs(&g, &y, &x).to_vec();
        let hx = hypot_vjp_rhs(&g, &y, &x).to_vec();
        let r = 2f64.sqrt();
        for (got, want) in hy
            .iter()
            .zip([1.0 / r, 1.0 / r, -1.0, 0.0, 0.6])
            .chain(hx.iter().zip([1.0 / r, -1.0 / r, 0.0, 0.0, 0.8]))
        {
            let got = got.to_real();
            assert!((got - want).abs() <= 1e-6, "{got} vs {want}");
        }
    }
    check::<f32>(1e30);
    check::<f64>(1e300);
}

/// `powi` at zero and for negative bases: `d/dx x^n = n x^(n-1)`, `0` for `n = 0`, and the
/// values are those of repeated multiplication.
#[test]
fn powi_at_zero_and_negative_bases() {
    let x = tensor::<f64>(&[-2.0, 0.0, 3.0], &[3]);
    let g = Tensor::ones(&[3]);
    assert_close(&x.powi(3), &[-8.0, 0.0, 27.0], 0.0);
    assert_close(&powi_vjp(&g, &x, 3), &[12.0, 0.0, 27.0], 0.0);
    assert_close(&x.powi(0), &[1.0, 1.0, 1.0], 0.0);
    assert_close(&powi_vjp(&g, &x, 0), &[0.0, 0.0, 0.0], 0.0);
    assert_close(&powi_jvp(&x, 1, &g), &[1.0, 1.0, 1.0], 0.0);
    let x = tensor::<f64>(&[-2.0, 4.0], &[2]);
    assert_close(&x.powi(-2), &[0.25, 1.0 / 16.0], 0.0);
    assert_close(
        &powi_vjp(&Tensor::ones(&[2]), &x, -2),
        &[0.25, -1.0 / 32.0],
        1e-15,
    );
}

#[test]
fn shape_mismatch_names_the_op_and_the_shapes() {
    let a = Tensor::<f64>::ones(&[2, 3]);
    let b = Tensor::<f64>::ones(&[4]);
    let err = a.try_logaddexp(&b).unwrap_err().to_string();
    assert!(
        err.contains("logaddexp") && err.contains("[2, 3]") && err.contains("[4]"),
        "{err}"
    );
    let msg = crate::common::panic_message(|| a.hypot(&b));
    assert!(
        msg.contains("hypot") && msg.contains("[2, 3]") && msg.contains("[4]"),
        "{msg}"
    );
}
