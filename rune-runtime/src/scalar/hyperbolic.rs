//! The hyperbolic functions and their inverses.

use super::*;

/// The hyperbolic tangent; the derivative is `1 - tanh(x)² = 4e / (1 + e)²` with `e = e^(-2|x|)`,
/// computed from `x` so that it keeps its relative precision where `tanh` rounds to `±1`.
pub mod tanh {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.vtanh()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        let e = (-(x.abs() + x.abs())).vexp();
        let d = T::one() + e;
        (e + e + e + e) / (d * d)
    }

    chain_rule!(Input);
}

/// The hyperbolic sine; the derivative is `cosh x`.
pub mod sinh {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::sinh(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        Float::cosh(x)
    }

    chain_rule!(Input);
}

/// The hyperbolic cosine; the derivative is `sinh x`.
pub mod cosh {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::cosh(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        Float::sinh(x)
    }

    chain_rule!(Input);
}

/// The inverse hyperbolic sine; the derivative is `1 / √(x² + 1)`, written `1 / hypot(x, 1)` so
/// that it does not overflow for large `x`.
pub mod asinh {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::asinh(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        Float::hypot(x, T::one()).recip()
    }

    chain_rule!(Input);
}

/// The inverse hyperbolic cosine on `[1, ∞)`; the derivative is `1 / (√(x - 1) √(x + 1))`
/// (infinite at 1, no overflow for large `x`).
pub mod acosh {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::acosh(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        ((x - T::one()).sqrt() * (x + T::one()).sqrt()).recip()
    }

    chain_rule!(Input);
}

/// The inverse hyperbolic tangent on `(-1, 1)`; the derivative is `1 / ((1 - x)(1 + x))`.
pub mod atanh {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Float::atanh(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        one_minus_square(x).recip()
    }

    chain_rule!(Input);
}
