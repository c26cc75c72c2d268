//! The methods of `f32` and `f64` in functions of numbers: each computes what Rust's method of
//! the same name computes, in the function itself and in every generated variant, and its
//! derivative is checked against central differences and derivatives worked out by hand.

use rune_ad::prelude::*;

/// Central difference of `f` at `x`.
fn central(f: impl Fn(f64) -> f64, x: f64) -> f64 {
    let h = 1e-6;
    (f(x + h) - f(x - h)) / (2.0 * h)
}

/// A staircase fee: the amount rounded as Rust rounds it, times a rate.
#[differentiable]
fn fee(amount: f64, rate: f64) -> f64 {
    amount.round() * rate + amount.round_ties_even() * 0.5
}

#[test]
fn round_rounds_halves_as_rust_does_in_every_variant() {
    // `f64::round` takes halves away from zero, `round_ties_even` to even: 2.5 -> 3 and 2.
    for (amount, rounded, even) in [(2.5, 3.0, 2.0), (-2.5, -3.0, -2.0), (0.5, 1.0, 0.0)] {
        let want = rounded * 1.5 + even * 0.5;
        assert_eq!(fee(amount, 1.5), want);
        let (v, (ga, gr)) = fee_value_and_grad(amount, 1.5);
        assert_eq!(v, want);
        // Zero derivative through the rounding; the rate's is the rounded amount.
        assert_eq!((ga, gr), (0.0, rounded));
        let (vj, t) = fee_jvp(amount, 1.5, &1.0, &2.0);
        assert_eq!((vj, t), (want, 2.0 * rounded));
    }
    // Away from the halves the derivative is zero, as the differences say.
    assert_eq!(central(|a| fee(a, 1.5), 1.3), 0.0);
}
