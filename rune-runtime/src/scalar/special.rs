//! The error function, its complement and inverse, `lgamma` and `digamma`.

use super::*;

/// The error function; the derivative is `2/√π e^(-x²)`.
pub mod erf {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Element::erf(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        two_over_sqrt_pi::<T>() * (-(x * x)).vexp()
    }

    chain_rule!(Input);
}

/// The complementary error function `1 - erf(x)`, accurate for large `x`; the derivative is
/// `-2/√π e^(-x²)`.
pub mod erfc {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Element::erfc(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        -(two_over_sqrt_pi::<T>() * (-(x * x)).vexp())
    }

    chain_rule!(Input);
}

/// The inverse error function on `[-1, 1]`; the derivative is `√π/2 e^(y²)`.
pub mod erfinv {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Element::erfinv(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Output(y): Output<T>) -> T {
        (y * y).vexp() / two_over_sqrt_pi::<T>()
    }

    chain_rule!(Output);
}

/// `ln |Γ(x)|`; the derivative is the digamma function `ψ(x)`.
pub mod lgamma {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Element::ln_gamma(x)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        Element::polygamma(x, 0)
    }

    chain_rule!(Input);
}

/// The digamma function `ψ(x) = Γ'(x)/Γ(x)`; the derivative is the trigamma function `ψ'(x)`.
pub mod digamma {
    use super::*;

    /// The function.
    #[inline]
    pub fn value<T: Element>(x: T) -> T {
        Element::polygamma(x, 0)
    }

    /// Its derivative.
    #[inline]
    pub fn derivative<T: Element>(Input(x): Input<T>) -> T {
        Element::polygamma(x, 1)
    }

    chain_rule!(Input);
}
