//! Matrix products of dual numbers as products of reals, the kernel `Dual<T>` gives
//! `ops::linalg::gemm`.

use ndarray::{Array2, ArrayView2};

use super::Dual;
use crate::element::Element;
use crate::gemm::ndarray_gemm;

/// The matrix product of dual numbers as products of reals: `(A + A'ε)(B + B'ε) = AB + (A'B +
/// AB')ε`, three GEMMs of the element type's own kernel (faer for `f32`/`f64`, this one again
/// for nested duals) where `ndarray`'s generic loop would multiply dual numbers one by one. A
/// tangent part that is all zeros (a constant lifted into dual numbers, the common case in
/// `f_hvp`) skips its product, which also keeps it an exact zero where the other factor holds
/// an infinity (the strong zero of [`Element::strong_times`]).
pub(super) fn dual_gemm<T: Element>(
    a: &ArrayView2<'_, Dual<T>>,
    b: &ArrayView2<'_, Dual<T>>,
    c: &mut [Dual<T>],
    accumulate: bool,
) {
    // The tangents are only copied out when one is not zero, which the pass copying out the
    // values finds.
    let split = |x: &ArrayView2<'_, Dual<T>>| -> (Array2<T>, Option<Array2<T>>) {
        let mut constant = true;
        let re = x.map(|d| {
            constant &= d.du.is_exact_zero();
            d.re
        });
        (re, (!constant).then(|| x.map(|d| d.du)))
    };
    let real = |a: &Array2<T>, b: &Array2<T>, c: &mut [T], acc: bool| match T::gemm_kernel() {
        Some(kernel) => kernel(&a.view(), &b.view(), c, acc),
        None => ndarray_gemm(&a.view(), &b.view(), c, acc),
    };
    let (a_re, a_du) = split(a);
    let (b_re, b_du) = split(b);
    let len = c.len();
    let mut re = vec![T::zero(); len];
    real(&a_re, &b_re, &mut re, false);
    // Both factors constant (a product of constants lifted into dual numbers): no tangent
    // product and no buffer for one.
    let mut du = Vec::new();
    if a_du.is_some() || b_du.is_some() {
        du = vec![T::zero(); len];
        if let Some(a_du) = &a_du {
            real(a_du, &b_re, &mut du, false);
        }
        if let Some(b_du) = &b_du {
            real(&a_re, b_du, &mut du, a_du.is_some());
        }
    }
    let put = |out: &mut Dual<T>, product: Dual<T>| {
        *out = if accumulate { *out + product } else { product };
    };
    if du.is_empty() {
        for (out, r) in c.iter_mut().zip(re) {
            put(out, Dual::constant(r));
        }
    } else {
        for ((out, r), d) in c.iter_mut().zip(re).zip(du) {
            put(out, Dual::new(r, d));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_traits::Zero;

    /// The split product equals the products of dual numbers one by one (`ndarray`'s loop), for
    /// strided views, accumulation, either factor constant or both, and nested duals.
    #[test]
    fn dual_products_are_three_real_products() {
        let dual = |k: usize| Dual::new((k as f64 * 0.37).sin(), (k as f64 * 0.91).cos());
        let a = Array2::from_shape_fn((5, 3), |(i, j)| dual(i * 3 + j));
        let b = Array2::from_shape_fn((4, 3), |(i, j)| dual(100 + i * 3 + j));
        let constant = b.map(|d| Dual::constant(d.re));
        let constant_a = a.map(|d| Dual::constant(d.re));
        for (a, b, what) in [
            (a.view(), b.t(), "b"),
            (a.view(), constant.t(), "constant b"),
            (constant_a.view(), b.t(), "constant a"),
            (constant_a.view(), constant.t(), "both constant"),
        ] {
            for accumulate in [false, true] {
                let start: Vec<Dual<f64>> = (0..20).map(|k| dual(200 + k)).collect();
                let (mut got, mut expected) = (start.clone(), start);
                dual_gemm(&a, &b, &mut got, accumulate);
                ndarray_gemm(&a, &b, &mut expected, accumulate);
                for (g, e) in got.iter().zip(&expected) {
                    assert!((g.re - e.re).abs() < 1e-14, "{what}");
                    assert!((g.du - e.du).abs() < 1e-14, "{what}");
                }
            }
        }
        // Dual numbers of dual numbers: each level splits again.
        let nested = |k: usize| Dual::new(dual(k), dual(k + 50));
        let a = Array2::from_shape_fn((2, 3), |(i, j)| nested(i * 3 + j));
        let b = Array2::from_shape_fn((3, 2), |(i, j)| nested(20 + i * 2 + j));
        let (mut got, mut expected) = (vec![Dual::zero(); 4], vec![Dual::zero(); 4]);
        dual_gemm(&a.view(), &b.view(), &mut got, false);
        ndarray_gemm(&a.view(), &b.view(), &mut expected, false);
        for (g, e) in got.iter().zip(&expected) {
            for (u, v) in [
                (g.re.re, e.re.re),
                (g.re.du, e.re.du),
                (g.du.re, e.du.re),
                (g.du.du, e.du.du),
            ] {
                assert!((u - v).abs() < 1e-14);
            }
        }
    }
}
