//! The activations: `sigmoid`, `relu`, `softplus`, `log_sigmoid`.

use super::*;

/// The logistic function `1 / (1 + e^-x)`, evaluated as `e^x / (1 + e^x)` below 0 so that it
/// neither overflows nor loses relative precision; the derivative is `y(1 - y) = e / (1 + e)²`
/// with `e = e^(-|x|)`, computed from `x` so that it keeps its relative precision where the
/// output rounds to 1.
pub mod sigmoid {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        // One exponential, `e^(-|x|)`, for both sides. `-|x|` is written as the side's own
        // smooth formula (`-x` from 0 up, `x` below) so that a dual number differentiates each
        // side as written, also at 0, where `abs` has the derivative 0 of its kink.
        let e = (if x >= T::zero() { -x } else { x }).vexp();
        if x >= T::zero() {
            T::one() / (T::one() + e)
        } else {
            e / (T::one() + e)
        }
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        let e = (-x.abs()).vexp();
        let d = T::one() + e;
        e / (d * d)
    }

    chain_rule!(Input);
}

/// `max(x, 0)`, NaN kept; the derivative is a gate: `1` for `x > 0`, else `0` (also at 0).
pub mod relu {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        if x <= T::zero() {
            T::zero()
        } else {
            x
        }
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        if x > T::zero() {
            T::one()
        } else {
            T::zero()
        }
    }

    /// A tangent or cotangent `d` through the function: `d` where the gate is open, else `0`.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn tangent<T: Element>(d: T, Input(x): Input<T>) -> T {
        if x > T::zero() {
            d
        } else {
            T::zero()
        }
    }

    same_in_every_pass!(Input);
}

/// `ln(1 + e^x)`, evaluated as `x + ln(1 + e^-x)` above 0 and `ln(1 + e^x)` otherwise, so that it
/// neither overflows for large `x` nor loses relative precision for very negative `x` (where it
/// is about `e^x`); the derivative is `sigmoid(x)`, `1/2` at 0. Each branch is smooth, so dual
/// numbers differentiate it exactly at 0 too, where `max(x, 0) + ln(1 + e^-|x|)` has a kink
/// in each term.
pub mod softplus {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        if x > T::zero() {
            x + (-x).vexp().vln_1p()
        } else {
            x.vexp().vln_1p()
        }
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        sigmoid::value(x)
    }

    chain_rule!(Input);
}

/// `ln sigmoid(x) = -softplus(-x)`, evaluated as `x - ln(1 + e^x)` below 0 and `-ln(1 + e^-x)`
/// otherwise, so that it neither overflows nor loses precision for large `|x|`; the derivative
/// is `sigmoid(-x)`.
pub mod log_sigmoid {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        if x < T::zero() {
            x - x.vexp().vln_1p()
        } else {
            -(-x).vexp().vln_1p()
        }
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        sigmoid::value(-x)
    }

    chain_rule!(Input);
}
