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

/// `x · sigmoid(x)` (SiLU, swish); the derivative is `σ(x) (1 + x (1 - σ(x)))`.
pub mod silu {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x * sigmoid::value(x)
    }

    /// Its derivative `σ(x) + x σ'(x)`, with `σ'` the quotient rule on `sigmoid`'s formula as
    /// written, as dual numbers differentiate the value's formula.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        let (s, ds) = if x >= T::zero() {
            // `1 / (1 + e)`, `e = e^-x`: the quotient rule gives `e q / (1 + e)`.
            let e = (-x).vexp();
            let b = T::one() + e;
            let q = T::one() / b;
            (q, e * q / b)
        } else {
            // `e / (1 + e)`, `e = e^x`: `(e - e q) / (1 + e)`.
            let e = x.vexp();
            let b = T::one() + e;
            let q = e / b;
            (q, (e - e * q) / b)
        };
        s + x * ds
    }

    chain_rule!(Input);
}

/// `x Φ(x) = x (1 + erf(x/√2)) / 2`, the exact GELU (PyTorch's default); the derivative is
/// `Φ(x) + x φ(x)`, `φ` the standard normal density.
pub mod gelu {
    use super::*;

    /// The standard normal distribution function `Φ(x)`.
    fn cdf<T: Element>(x: T) -> T {
        let half = T::from_f64(0.5);
        half * (T::one() + (x * T::from_f64(std::f64::consts::FRAC_1_SQRT_2)).erf())
    }

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x * cdf(x)
    }

    /// Its derivative `Φ(x) + x φ(x)`, with `φ(x)` written as the chain rule through `erf`
    /// gives it (`½ · 1/√2 · erf'(x/√2)`), as dual numbers differentiate the value's formula.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        let c = T::from_f64(std::f64::consts::FRAC_1_SQRT_2);
        let density = T::from_f64(0.5) * (c * super::erf::derivative(Input(x * c)));
        cdf(x) + x * density
    }

    chain_rule!(Input);
}

/// GELU's tanh approximation `x (1 + tanh(√(2/π) (x + 0.044715 x³))) / 2` (PyTorch's
/// `approximate='tanh'`, JAX's default).
pub mod gelu_tanh {
    use super::*;

    /// `√(2/π)`.
    const SCALE: f64 = 0.797_884_560_802_865_4;
    const CUBIC: f64 = 0.044_715;

    fn inner<T: Element>(x: T) -> T {
        T::from_f64(SCALE) * (x + T::from_f64(CUBIC) * x * x * x)
    }

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        T::from_f64(0.5) * x * (T::one() + tanh::value(inner(x)))
    }

    /// Its derivative, the chain and product rules on the value's formula as written (so that
    /// dual numbers, which differentiate that formula, give the same numbers, also in the tails
    /// where `1 + tanh` rounds to 0).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        let half = T::from_f64(0.5);
        let u = inner(x);
        // d/dx of `(c x) x · x`: `((c + c) x) ... ` as the product rule builds it.
        let cx = T::from_f64(CUBIC) * x;
        let du = T::from_f64(SCALE) * (T::one() + ((cx + cx) * x + cx * x));
        half * (T::one() + tanh::value(u)) + (half * x) * (du * tanh::derivative(Input(u)))
    }

    chain_rule!(Input);
}
