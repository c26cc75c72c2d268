//! `var` and `std` over all axes and over axis lists, with `ddof` 0 and 1; hand-derived values
//! at large offsets (where a one-pass formula cancels), at zero variance, and where `n <= ddof`.

use rune_runtime::__private::rules::*;
use rune_runtime::{stack, Element, Tensor};

use crate::common::{assert_close, panic_message, tensor, uniform, Case};
// The axis lists of `sum_axes`' and `mean_axes`' cases: the same layouts and kernels.
use crate::reduce::AXES_CASES;

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    for ddof in [0, 1] {
        for (i, &(label, shape, axes, keepdims)) in AXES_CASES.iter().enumerate() {
            // Over no axes each group is one element: `n - ddof = 0` for `ddof = 1`.
            if axes.is_empty() && ddof > 0 {
                continue;
            }
            let x = uniform::<T>(shape, -2.0, 2.0, 700 + i as u64);
            let (a1, a2, a3) = (axes.to_vec(), axes.to_vec(), axes.to_vec());
            cases.push(Case::new(
                "var_axes",
                label,
                vec![x.clone()],
                move |x| x[0].var_axes(&a1, keepdims, ddof),
                move |x, t| var_axes_jvp(&x[0], &a2, keepdims, ddof, &t[0]),
                move |x, g| vec![var_axes_vjp(g, &x[0], &a3, keepdims, ddof)],
            ));
            let (a1, a2, a3) = (axes.to_vec(), axes.to_vec(), axes.to_vec());
            cases.push(Case::new(
                "std_axes",
                label,
                vec![x],
                move |x| x[0].std_axes(&a1, keepdims, ddof),
                move |x, t| {
                    let y = x[0].std_axes(&a2, keepdims, ddof);
                    std_axes_jvp(&x[0], &y, &a2, keepdims, ddof, &t[0])
                },
                move |x, g| {
                    let y = x[0].std_axes(&a3, keepdims, ddof);
                    vec![std_axes_vjp(g, &x[0], &y, &a3, keepdims, ddof)]
                },
            ));
        }
        for (label, x) in [
            ("all", uniform::<T>(&[3, 4], -2.0, 2.0, 720)),
            // Around 100 in f32 the last bits are 1e-5 apart: the two passes keep the
            // deviations, and so the derivative, to that.
            ("offset by 100", uniform::<T>(&[2, 5], 99.0, 101.0, 721)),
        ] {
            cases.push(Case::new(
                "var",
                label,
                vec![x.clone()],
                move |x| x[0].var(ddof),
                move |x, t| var_jvp(&x[0], ddof, &t[0]),
                move |x, g| vec![var_vjp(g, &x[0], ddof)],
            ));
            cases.push(Case::new(
                "std",
                label,
                vec![x],
                move |x| x[0].std(ddof),
                move |x, t| std_jvp(&x[0], &x[0].std(ddof), ddof, &t[0]),
                move |x, g| vec![std_vjp(g, &x[0], &x[0].std(ddof), ddof)],
            ));
        }
    }
    cases
}

#[test]
fn values_by_hand() {
    // Rows [1, 2, 3] and [4, 5, 9]: means 2 and 6, squared deviations summing to 2 and 14.
    let x = tensor::<f64>(&[1.0, 2.0, 3.0, 4.0, 5.0, 9.0], &[2, 3]);
    assert_close(&x.var_axes(&[1], false, 0), &[2.0 / 3.0, 14.0 / 3.0], 1e-15);
    assert_close(&x.var_axes(&[-1], false, 1), &[1.0, 7.0], 1e-15);
    assert_close(&x.std_axes(&[1], false, 1), &[1.0, 7f64.sqrt()], 1e-15);
    assert_eq!(x.var_axes(&[1], true, 0).shape(), &[2, 1]);
    assert_eq!(x.std_axes(&[0], true, 0).shape(), &[1, 3]);
    // Columns [1, 4], [2, 5], [3, 9]: half-differences 1.5, 1.5, 3.
    assert_close(&x.std_axes(&[0], false, 0), &[1.5, 1.5, 3.0], 1e-15);
    // All six: mean 4, squared deviations 9 + 4 + 1 + 0 + 1 + 25 = 40.
    assert_eq!(x.var(0).shape(), &[] as &[usize]);
    assert_close(&x.var(0), &[40.0 / 6.0], 1e-15);
    assert_close(&x.var(1), &[8.0], 1e-15);
    assert_close(&x.std(1), &[8f64.sqrt()], 1e-15);
    assert_eq!(x.var_axes(&[0, 1], false, 1), x.var(1));
    // Over no axes every group is one element.
    assert_eq!(x.var_axes(&[], false, 0), Tensor::zeros(&[2, 3]));
}

#[test]
fn derivatives_by_hand() {
    // d var / dx = 2 (x - mean) / (n - ddof); d std / dx = (x - mean) / ((n - ddof) std).
    let x = tensor::<f64>(&[1.0, 2.0, 3.0, 6.0], &[4]);
    let g = Tensor::scalar(1.0);
    // mean 3, deviations [-2, -1, 0, 3], sum of squares 14.
    assert_close(&var_vjp(&g, &x, 0), &[-1.0, -0.5, 0.0, 1.5], 1e-15);
    assert_close(
        &var_vjp(&g, &x, 1),
        &[-4.0 / 3.0, -2.0 / 3.0, 0.0, 2.0],
        1e-15,
    );
    let y = x.std(1);
    let s = 14f64.sqrt() / 3f64.sqrt();
    assert_close(
        &std_vjp(&g, &x, &y, 1),
        &[-2.0 / (3.0 * s), -1.0 / (3.0 * s), 0.0, 3.0 / (3.0 * s)],
        1e-14,
    );
    let dx = tensor::<f64>(&[1.0, 0.0, 0.0, 1.0], &[4]);
    assert_close(&var_jvp(&x, 0, &dx), &[0.5], 1e-15);
    assert_close(&std_jvp(&x, &y, 1, &dx), &[1.0 / (3.0 * s)], 1e-14);
}

/// `mean(x²) - mean(x)²` loses everything at an offset of 1e8 in f64 (or 1e7 in f32): the
/// squares are 1e16 with an ulp of 2. Two passes around the first element give the exact
/// answer, and so do the derivatives.
#[test]
fn large_offsets_do_not_cancel() {
    fn check<T: Element>(offset: f64) {
        let x = tensor::<T>(
            &[offset + 1.0, offset + 2.0, offset + 3.0, offset + 4.0],
            &[4],
        );
        assert_eq!(x.var(0).item().to_real(), 1.25, "{}", T::NAME);
        assert_eq!(
            x.var(1).item(),
            T::from_f64(5.0) / T::from_f64(3.0),
            "{}",
            T::NAME
        );
        assert_eq!(x.std(0).item(), T::from_f64(1.25).sqrt(), "{}", T::NAME);
        let g = Tensor::scalar(T::one());
        assert_close(&var_vjp(&g, &x, 0), &[-0.75, -0.25, 0.25, 0.75], 0.0);
        // Columns `(a, -a)`: standard deviation `|a|`.
        let rows = stack(&[&x, &-&x], 0);
        assert_close(&rows.var_axes(&[1], false, 0), &[1.25, 1.25], 0.0);
        let columns = [offset + 1.0, offset + 2.0, offset + 3.0, offset + 4.0];
        assert_close(&rows.std_axes(&[0], false, 0), &columns, 1e-7);
        // The one-pass formula, for contrast.
        let naive = (x.square().mean() - x.mean().square()).item().to_real();
        assert!((naive - 1.25).abs() > 0.2, "{} naive {naive}", T::NAME);
    }
    check::<f64>(1e8);
    check::<f32>(1e7);
}

/// A group of equal values has variance exactly 0, even where its mean is not exact
/// (`(0.1 + 0.1 + 0.1) / 3 != 0.1`), and `std`'s derivative there is `0` by choice: `std` is
/// not differentiable at zero variance (it grows as `|t| std(v)` along every direction `v`),
/// and `0` is its smallest subgradient. PyTorch gives `0` too; JAX gives NaN.
#[test]
fn zero_variance() {
    let x = tensor::<f64>(&[0.1, 0.1, 0.1, 2.0, 1.0, 3.0], &[2, 3]);
    assert_ne!((0.1 + 0.1 + 0.1) / 3.0, 0.1);
    let y = x.std_axes(&[1], false, 1);
    assert_eq!(y.to_vec()[0], 0.0);
    assert_eq!(x.var_axes(&[1], false, 0).to_vec()[0], 0.0);
    let g = tensor::<f64>(&[1.0, 1.0], &[2]);
    // Row 2: deviations [0, -1, 1] over (n - ddof) std = 2 · 1.
    assert_close(
        &std_axes_vjp(&g, &x, &y, &[1], false, 1),
        &[0.0, 0.0, 0.0, 0.0, -0.5, 0.5],
        1e-15,
    );
    let dx = tensor::<f64>(&[1.0, -2.0, 5.0, 0.0, 0.0, 1.0], &[2, 3]);
    assert_close(
        &std_axes_jvp(&x, &y, &[1], false, 1, &dx),
        &[0.0, 0.5],
        1e-15,
    );
    assert_close(
        &var_axes_vjp(&g, &x, &[1], false, 0),
        &[0.0, 0.0, 0.0, 0.0, -2.0 / 3.0, 2.0 / 3.0],
        1e-15,
    );
    let constant = Tensor::<f64>::full(&[5], 4.0);
    assert_eq!(constant.std(0).item(), 0.0);
    assert_eq!(
        std_vjp(&Tensor::scalar(1.0), &constant, &constant.std(0), 0),
        Tensor::zeros(&[5])
    );
}

/// Where `n <= ddof` the divisor is `0`, as NumPy's `max(n - ddof, 0)`: `inf`, or NaN for zero
/// squared deviations (one element, or none).
#[test]
fn too_few_elements_for_ddof() {
    let x = tensor::<f64>(&[1.0, 3.0], &[2]);
    assert_eq!(x.var(2).item(), f64::INFINITY);
    assert_eq!(x.var(5).item(), f64::INFINITY);
    assert!(tensor::<f64>(&[2.0], &[1]).var(1).item().is_nan());
    assert!(Tensor::<f64>::zeros(&[0]).var(0).item().is_nan());
    let empty_rows = Tensor::<f64>::zeros(&[2, 0]).var_axes(&[1], false, 0);
    assert_eq!(empty_rows.shape(), &[2]);
    assert!(empty_rows.to_vec().iter().all(|v| v.is_nan()));
}

#[test]
fn zero_cotangents_stay_zero() {
    // `n - ddof = 0`: the local derivative is infinite, a zero cotangent still gives zero.
    let x = tensor::<f64>(&[1.0, 3.0], &[2]);
    let zero = Tensor::scalar(0.0);
    assert_eq!(var_vjp(&zero, &x, 2), Tensor::zeros(&[2]));
    assert_eq!(var_jvp(&x, 2, &Tensor::zeros(&[2])), zero);
}

#[test]
fn bad_axes_name_the_op_and_the_shape() {
    let x = Tensor::<f64>::zeros(&[2, 3]);
    let err = x.try_var_axes(&[2], false, 0).unwrap_err();
    assert_eq!(err.op(), "var_axes");
    assert!(err.to_string().contains("[2, 3]"), "{err}");
    let err = x.try_std_axes(&[0, -2], true, 1).unwrap_err();
    assert_eq!(err.op(), "std_axes");
    let msg = panic_message(|| x.std_axes(&[-3], false, 0));
    assert!(
        msg.starts_with("std_axes:") && msg.contains("[2, 3]"),
        "{msg}"
    );
    let g = Tensor::<f64>::zeros(&[3]);
    let msg = panic_message(|| var_axes_vjp(&g, &x, &[1], false, 0));
    assert!(msg.starts_with("var_axes_vjp:"), "{msg}");
}
