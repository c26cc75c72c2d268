//! Error-free transformations of `f64` (and one of `f32`) arithmetic (double-double building
//! blocks), without FMA, shared by the kernels that keep a result's rounding error: a sum or
//! product `a ∘ b` as `s + e` exactly.

/// `(s, e)` with `s + e == a + b` exactly, when `a == 0` or `exponent(a) >= exponent(b)`
/// (Dekker).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn fast_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    (s, b - (s - a))
}

/// Veltkamp's split: `(h, l)` with `h + l == a`, each of at most 26 significant bits.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn split(a: f64) -> (f64, f64) {
    let c = a * 134_217_729.0;
    let h = c - (c - a);
    (h, a - h)
}

/// Dekker's product: `(p, e)` with `p + e == a · b` exactly, `(bh, bl)` being `split(b)` (or
/// any split of `b` into halves of at most 26 bits), for `|a · b|` far from overflow and
/// underflow.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn two_prod_split(a: f64, b: f64, (bh, bl): (f64, f64)) -> (f64, f64) {
    let p = a * b;
    let (ah, al) = split(a);
    (p, ((ah * bh - p) + ah * bl + al * bh) + al * bl)
}

/// Dekker's product: `(p, e)` with `p + e == a · b` exactly.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn two_prod(a: f64, b: f64) -> (f64, f64) {
    two_prod_split(a, b, split(b))
}

/// `(s, e)` with `s + e == a + b` exactly, for any `a` and `b` (Knuth), in `f32`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn two_sum_f32(a: f32, b: f32) -> (f32, f32) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}
