//! `e^x`, logarithms and their accurate forms near 0.

use super::*;

/// `e^x`; the derivative is `y`.
pub mod exp {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.vexp()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Output(y): Output<T>) -> T {
        y
    }

    chain_rule!(Output);
}

/// The natural logarithm; the derivative is `1/x`.
pub mod ln {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.vln()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        x.recip()
    }

    chain_rule!(Input);
}

/// The base-2 logarithm; the derivative is `1/(x ln 2)`.
pub mod log2 {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.log2()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        (x * ln_2::<T>()).recip()
    }

    chain_rule!(Input);
}

/// `2^x`; the derivative is `y ln 2`.
pub mod exp2 {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.exp2()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Output(y): Output<T>) -> T {
        y * ln_2::<T>()
    }

    chain_rule!(Output);
}

/// `ln(1 + x)`; the derivative is `1/(1 + x)`.
pub mod log1p {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.vln_1p()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        (T::one() + x).recip()
    }

    chain_rule!(Input);
}

/// `e^x - 1`, accurate for small `x`; the derivative is `e^x`, read from `x` so that it keeps
/// its relative precision where `y` rounds to `-1`.
pub mod expm1 {
    use super::*;

    /// The function.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value<T: Element>(x: T) -> T {
        x.vexp_m1()
    }

    /// Its derivative.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        x.vexp()
    }

    chain_rule!(Input);
}
