//! Dual numbers agree with the one written derivative of every unary op of the registry
//! (`rune_ops::for_each_unary!`), at its kinks and special points as well as between them.
//!
//! Forward mode and `f_hvp` compute through [`Dual`] elements: `scalar::<op>::value` on a dual
//! number. The rules compute `scalar::<op>::derivative`. A dual number whose tangent came from
//! another formula (a kinked `value` written with a branch that picks a different side than the
//! rule, a guard on the primal part that drops a tangent) would give a different derivative
//! inside a function and in `f_hvp` than the rule does; this test compares the two for every op
//! at every point of a grid that holds the usual kinks (`0`, `±1`, halves for `round`), poles,
//! the ends of domains and values where outputs saturate. A new unary op is covered by its
//! registry entry alone.
//!
//! The second part checks the second derivative the same way: nested dual numbers against
//! central differences of the written derivative, wherever the derivative is smooth.

use rune_runtime::__private::scalar::{self, At};
use rune_runtime::{Dual, Element};

/// Points every op is checked at: its kinks, poles and domain ends among them.
const POINTS: &[f64] = &[
    0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 2.0, -2.0, 3.0, 1e-8, -1e-8, 1e-300,
    0.999, -0.999, 1.000_001, 0.3, -0.7, 9.0, -9.0, 20.0, -20.0, 40.0, -40.0, 100.0, -100.0, 710.0,
    -745.0, 1e10, -1e10,
];

/// Whether `got` is `want` within a few ulps, or both are the same non-finite value.
fn agrees(got: f64, want: f64, tol: f64) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    if want.is_infinite() {
        return got == want;
    }
    (got - want).abs() <= tol * want.abs().max(f64::MIN_POSITIVE)
}

/// One op: the tangent part of `value(x + ε)` against `derivative(at(x, value(x)))`.
fn first_order<T: Element>(
    name: &str,
    value: fn(Dual<T>) -> Dual<T>,
    derivative: fn(T, T) -> T,
    real_value: fn(T) -> T,
    tol: f64,
    failures: &mut Vec<String>,
) {
    for &p in POINTS {
        let x = T::from_f64(p);
        let dual = value(Dual::new(x, T::one()));
        let y = real_value(x);
        let want = derivative(x, y);
        if dual.re.to_real().to_bits() != y.to_real().to_bits() && !y.to_real().is_nan() {
            failures.push(format!(
                "{name} [{}] at {p}: the dual's primal part {} is not the value {}",
                T::NAME,
                dual.re,
                y
            ));
        }
        if !agrees(dual.du.to_real(), want.to_real(), tol) {
            failures.push(format!(
                "{name} [{}] at {p}: the dual's tangent {} is not the derivative {}",
                T::NAME,
                dual.du,
                want
            ));
        }
    }
}

/// One op: the second derivative from nested duals against central differences of the written
/// first derivative, at points where that derivative is smooth (a step of `h` either side stays
/// on the same piece, and the derivative is finite and not too large there).
fn second_order(
    name: &str,
    value: fn(Dual<Dual<f64>>) -> Dual<Dual<f64>>,
    derivative: fn(f64, f64) -> f64,
    real_value: fn(f64) -> f64,
    failures: &mut Vec<String>,
) -> usize {
    let d = |x: f64| derivative(x, real_value(x));
    let mut checked = 0;
    let kinked = KINKED.contains(&name);
    for &p in POINTS {
        if p.abs() > 50.0 || (p != 0.0 && p.abs() < 1e-3) {
            continue;
        }
        let h = 1e-4 * p.abs().max(1e-2);
        let (lo, mid, hi) = (d(p - h), d(p), d(p + h));
        let smooth = [lo, mid, hi].iter().all(|v| v.is_finite() && v.abs() < 1e6)
            && (hi - 2.0 * mid + lo).abs() <= 1e-3 * (1.0 + mid.abs());
        if !smooth || (kinked && kink_near(p, h)) {
            continue;
        }
        // Richardson extrapolation of two central differences: error O(h⁴).
        let c = |h: f64| (d(p + h) - d(p - h)) / (2.0 * h);
        let want = (4.0 * c(h / 2.0) - c(h)) / 3.0;
        let x = Dual::new(Dual::new(p, 1.0), Dual::new(1.0, 0.0));
        let got = value(x).du.du;
        checked += 1;
        if (got - want).abs() > 1e-6 * (1.0 + want.abs()) {
            failures.push(format!(
                "{name} at {p}: the nested dual's second derivative {got} is not {want} \
                 (central differences of the derivative)"
            ));
        }
    }
    checked
}

/// The ops with kinks (their derivative jumps at integers or halves; it is constant between).
const KINKED: &[&str] = &["abs", "relu", "sign", "floor", "ceil", "round"];

/// Whether a kink of some op (an integer or a half, where `floor`, `round` and `abs` bend) lies
/// within `h` of `p`.
fn kink_near(p: f64, h: f64) -> bool {
    let twice = 2.0 * p;
    (twice - twice.round()).abs() <= 2.0 * h
}

macro_rules! checks {
    ($($name:ident, $jvp:ident, $vjp:ident, reads $reads:ident, $reference:literal, $doc:literal;)*) => {
        fn first_order_all<T: Element>(tol: f64) -> Vec<String> {
            let mut failures = Vec::new();
            $(first_order::<T>(
                stringify!($name),
                scalar::$name::value,
                |x, y| scalar::$name::derivative(At::at(x, y)),
                scalar::$name::value,
                tol,
                &mut failures,
            );)*
            failures
        }

        fn second_order_all() -> Vec<String> {
            let mut failures = Vec::new();
            let mut checked = 0;
            $(checked += second_order(
                stringify!($name),
                scalar::$name::value,
                |x, y| scalar::$name::derivative(At::at(x, y)),
                scalar::$name::value,
                &mut failures,
            );)*
            // Every op is smooth at some of the points.
            assert!(checked >= 10 * OPS.len(), "only {checked} points checked");
            failures
        }

        const OPS: &[&str] = &[$(stringify!($name)),*];
    };
}

rune_ops::for_each_unary!(checks);

#[track_caller]
fn assert_none(failures: Vec<String>) {
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn dual_tangents_are_the_written_derivatives_f64() {
    assert_none(first_order_all::<f64>(4.0 * f64::EPSILON));
}

#[test]
fn dual_tangents_are_the_written_derivatives_f32() {
    assert_none(first_order_all::<f32>(4.0 * f64::from(f32::EPSILON)));
}

#[test]
fn nested_duals_give_the_derivative_of_the_written_derivative() {
    assert_none(second_order_all());
}

/// The grid holds the kinks the table's docs name, and the table is not empty.
#[test]
fn the_grid_covers_the_kinks() {
    assert!(OPS.len() >= 30, "{OPS:?}");
    for kink in [0.0, 1.0, -1.0, 0.5, -0.5, 2.5] {
        assert!(POINTS.contains(&kink), "{kink}");
    }
}

/// The check is not vacuous: a dual tangent from another formula than the derivative fails it.
#[test]
fn a_tangent_from_another_formula_fails() {
    let mut failures = Vec::new();
    first_order::<f64>(
        "relu with the derivative 1 at 0",
        scalar::relu::value,
        |x, _| if x >= 0.0 { 1.0 } else { 0.0 },
        scalar::relu::value,
        4.0 * f64::EPSILON,
        &mut failures,
    );
    assert!(!failures.is_empty());
    assert!(
        failures
            .iter()
            .all(|f| f.contains(" at 0:") || f.contains(" at -0:")),
        "{failures:?}"
    );
}
