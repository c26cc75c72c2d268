//! `sqrt`, `recip`, `abs` and `square`.

use super::*;

/// The square root; the derivative is `1/(2y)`.
pub mod sqrt {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.sqrt()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Output(y): Output<T>) -> T {
        (y + y).recip()
    }

    chain_rule!(Output);
}

/// The cube root; the derivative is `1 / (3y²)`.
pub mod cbrt {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.cbrt()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Output(y): Output<T>) -> T {
        (T::from_f64(3.0) * y * y).recip()
    }

    chain_rule!(Output);
}

/// `1 / x`; the derivative is `-y²`.
pub mod recip {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.recip()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Output(y): Output<T>) -> T {
        -(y * y)
    }

    chain_rule!(Output);
}

/// `|x|`; the derivative is `sign x`, `0` at 0 (the subgradient PyTorch picks), NaN kept.
pub mod abs {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.abs()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        if x > T::zero() {
            T::one()
        } else if x < T::zero() {
            -T::one()
        } else if x == T::zero() {
            T::zero()
        } else {
            x
        }
    }

    chain_rule!(Input);
}

/// `x * x`; the derivative is `2x`.
pub mod square {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x * x
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        x + x
    }

    chain_rule!(Input);
}
