//! The matrix product against a naive triple loop, on every operand layout the GEMM sees.
//!
//! `f32` and `f64` products run faer, dual numbers ndarray's generic loop.
//! Operands are 2-D views of the layouts the runtime hands the GEMM: row-major, transposed
//! (column-major), sub-views with a row stride larger than the row, reversed (negative
//! strides); `matmul_jvp` with both tangents accumulates its second product into the first, and
//! the VJPs multiply by transposes.

use rune_runtime::__private::rules::{matmul_jvp, matmul_vjp_lhs, matmul_vjp_rhs};
use rune_runtime::{Dual, Element, Tensor};

/// `(m, k, n)`: row and column vectors, empty operands, a zero-length contraction, tiny sizes
/// (faer's unrolled kernels) and larger ones (its packed kernels), odd sizes that leave partial
/// register blocks, and one above `parallel::MIN_PARALLEL_GEMM` multiply-adds, split across
/// threads with the `parallel` feature.
const SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (3, 4, 5),
    (8, 8, 8),
    (1, 300, 20),
    (40, 300, 1),
    (1, 500, 1),
    (0, 5, 7),
    (5, 0, 7),
    (5, 7, 0),
    (16, 64, 64),
    (33, 65, 31),
    (64, 200, 17),
    (96, 300, 40),
];

#[derive(Clone, Copy, Debug)]
enum Layout {
    RowMajor,
    Transposed,
    Strided,
    TransposedStrided,
    Reversed,
}

const LAYOUTS: [Layout; 5] = [
    Layout::RowMajor,
    Layout::Transposed,
    Layout::Strided,
    Layout::TransposedStrided,
    Layout::Reversed,
];

/// A `rows × cols` operand of uniform samples, held in `layout`.
fn operand<T: Element>(rows: usize, cols: usize, layout: Layout, seed: u64) -> Tensor<T> {
    let u = |shape: &[usize]| {
        Tensor::<T>::rand_uniform(shape, T::from_f64(-1.0), T::from_f64(1.0), seed)
    };
    let t = match layout {
        Layout::RowMajor => u(&[rows, cols]),
        Layout::Transposed => u(&[cols, rows]).t(),
        Layout::Strided => u(&[rows + 2, cols + 3]).shrink(&[(1, 1 + rows), (2, 2 + cols)]),
        Layout::TransposedStrided => u(&[cols + 3, rows + 2])
            .shrink(&[(2, 2 + cols), (1, 1 + rows)])
            .t(),
        Layout::Reversed => u(&[rows, cols]).flip(&[0, 1]),
    };
    assert_eq!(t.shape(), &[rows, cols]);
    t
}

fn real<T: Element>(t: &Tensor<T>) -> Vec<f64> {
    t.to_vec().into_iter().map(|v| v.to_real()).collect()
}

/// `a · b` by the definition, in `f64`, and `Σ_p |a_ip| |b_pj|` (what the rounding error of
/// any summation order is bounded by, times `k · ε`).
fn naive(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let (mut c, mut abs) = (vec![0.0; m * n], vec![0.0; m * n]);
    for i in 0..m {
        for j in 0..n {
            for p in 0..k {
                c[i * n + j] += a[i * k + p] * b[p * n + j];
                abs[i * n + j] += (a[i * k + p] * b[p * n + j]).abs();
            }
        }
    }
    (c, abs)
}

/// `got` is `want` within `2 (k + 1) ε` times the absolute sum (both sides round).
#[track_caller]
fn assert_product<T: Element>(got: &Tensor<T>, want: &[f64], abs: &[f64], k: usize, what: &str) {
    let eps = T::epsilon().to_real();
    let got = real(got);
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (idx, ((g, w), s)) in got.iter().zip(want).zip(abs).enumerate() {
        let tol = 2.0 * (k as f64 + 1.0) * eps * s + f64::MIN_POSITIVE;
        assert!(
            (g - w).abs() <= tol,
            "{what}: element {idx} is {g}, expected {w} (tolerance {tol:e})"
        );
    }
}

fn add(x: &[f64], y: &[f64]) -> Vec<f64> {
    x.iter().zip(y).map(|(a, b)| a + b).collect()
}

fn check_products<T: Element>() {
    for &(m, k, n) in SHAPES {
        for (la_i, &la) in LAYOUTS.iter().enumerate() {
            for (lb_i, &lb) in LAYOUTS.iter().enumerate() {
                let what = format!("{} {m}x{k}x{n}, {la:?} . {lb:?}", T::NAME);
                let seed = (la_i * 8 + lb_i) as u64;
                let a = operand::<T>(m, k, la, seed);
                let b = operand::<T>(k, n, lb, seed + 100);
                let (want, abs) = naive(&real(&a), &real(&b), m, k, n);

                // c = a · b
                let c = a.matmul(&b);
                assert_eq!(c.shape(), &[m, n], "{what}");
                assert_product(&c, &want, &abs, k, &what);

                // c = da · b, then c += a · db (the JVP's second product accumulates).
                let da = operand::<T>(m, k, lb, seed + 200);
                let db = operand::<T>(k, n, la, seed + 300);
                let (w1, s1) = naive(&real(&da), &real(&b), m, k, n);
                let (w2, s2) = naive(&real(&a), &real(&db), m, k, n);
                let jvp = matmul_jvp(&a, &b, Some(&da), Some(&db));
                assert_product(
                    &jvp,
                    &add(&w1, &w2),
                    &add(&s1, &s2),
                    k,
                    &format!("{what}, accumulated"),
                );

                // The VJPs: g · bᵀ and aᵀ · g, with b and a in the layouts above.
                let g = operand::<T>(m, n, la, seed + 400);
                let bt = b
                    .t()
                    .to_vec()
                    .into_iter()
                    .map(|v| v.to_real())
                    .collect::<Vec<_>>();
                let (wl, sl) = naive(&real(&g), &bt, m, n, k);
                let ga = matmul_vjp_lhs(&g, &[m, k], &b);
                assert_product(&ga, &wl, &sl, n, &format!("{what}, g . b^T"));
                let at = a
                    .t()
                    .to_vec()
                    .into_iter()
                    .map(|v| v.to_real())
                    .collect::<Vec<_>>();
                let (wr, sr) = naive(&at, &real(&g), k, m, n);
                let gb = matmul_vjp_rhs(&g, &a, &[k, n]);
                assert_product(&gb, &wr, &sr, m, &format!("{what}, a^T . g"));
            }
        }
    }
}

#[test]
fn f32_products_match_the_definition() {
    check_products::<f32>();
}

#[test]
fn f64_products_match_the_definition() {
    check_products::<f64>();
}

/// Dual numbers keep ndarray's generic product: primal `Σ a b`, tangent `Σ (a b' + a' b)`.
#[test]
fn dual_products_match_the_definition() {
    let dual = |re: &Tensor<f64>, du: &Tensor<f64>| {
        let v = re
            .to_vec()
            .into_iter()
            .zip(du.to_vec())
            .map(|(r, d)| Dual::new(r, d))
            .collect();
        Tensor::from_vec(v, re.shape())
    };
    for &(m, k, n) in SHAPES {
        for (li, &layout) in LAYOUTS.iter().enumerate() {
            let what = format!("Dual<f64> {m}x{k}x{n}, {layout:?}");
            let seed = li as u64;
            let (ar, ad) = (
                operand::<f64>(m, k, layout, seed),
                operand(m, k, layout, seed + 1),
            );
            let (br, bd) = (
                operand::<f64>(k, n, layout, seed + 2),
                operand(k, n, layout, seed + 3),
            );
            // The dual operands in the same layout: built row-major, then viewed alike.
            let a = match layout {
                Layout::Transposed | Layout::TransposedStrided => dual(&ar.t(), &ad.t()).t(),
                _ => dual(&ar, &ad),
            };
            let b = match layout {
                Layout::Transposed | Layout::TransposedStrided => dual(&br.t(), &bd.t()).t(),
                _ => dual(&br, &bd),
            };
            let c = a.matmul(&b);
            assert_eq!(c.shape(), &[m, n], "{what}");
            let (re, s_re) = naive(&real(&ar), &real(&br), m, k, n);
            let (t1, s1) = naive(&real(&ar), &real(&bd), m, k, n);
            let (t2, s2) = naive(&real(&ad), &real(&br), m, k, n);
            let got: Vec<Dual<f64>> = c.to_vec();
            let re_got = Tensor::from_vec(got.iter().map(|d| d.re).collect(), &[m, n]);
            let du_got = Tensor::from_vec(got.iter().map(|d| d.du).collect(), &[m, n]);
            assert_product(&re_got, &re, &s_re, k, &format!("{what}, primal"));
            assert_product(
                &du_got,
                &add(&t1, &t2),
                &add(&s1, &s2),
                2 * k,
                &format!("{what}, tangent"),
            );
        }
    }
}

/// Stacks of outer products (contraction length 1, written without zeroing first), with
/// broadcast batch axes and operands that are transposed or reversed views: each batch
/// element against the definition, and the VJP of a stacked right operand (`aᵀ · g` per batch
/// element, the per-example gradient of a dense layer) likewise.
#[test]
fn stacked_outer_products_match_the_definition() {
    fn check<T: Element>() {
        let u = |shape: &[usize], seed| {
            Tensor::<T>::rand_uniform(shape, T::from_f64(-1.0), T::from_f64(1.0), seed)
        };
        // a: [3, 1, 4, 1] as a transposed view; b: [2, 1, 5] reversed along its last axis.
        let a = u(&[1, 4, 1, 3], 1).permute(&[3, 2, 1, 0]);
        assert_eq!(a.shape(), &[3, 1, 4, 1]);
        let b = u(&[2, 1, 5], 2).flip(&[2]);
        let c = a.matmul(&b);
        assert_eq!(c.shape(), &[3, 2, 4, 5], "{}", T::NAME);
        let pairs = (0..3).flat_map(|i| (0..2).map(move |j| (i, j)));
        let what = format!("{} stacked outer products", T::NAME);
        assert_outer_products(&c, &real(&a), &real(&b), pairs, &what);

        // The VJP for a stacked right operand: a [6, 1, 4], g [6, 1, 5] give [6, 4, 5].
        let a = u(&[6, 4], 3).reshape(&[6, 1, 4]);
        let g = u(&[6, 5], 4).reshape(&[6, 1, 5]);
        let gb = matmul_vjp_rhs(&g, &a, &[6, 4, 5]);
        assert_eq!(gb.shape(), &[6, 4, 5]);
        let what = format!("{} per-example a^T . g", T::NAME);
        assert_outer_products(&gb, &real(&a), &real(&g), (0..6).map(|e| (e, e)), &what);

        // The VJP for a stacked left operand of a product with one column: b [6, 5, 1],
        // g [6, 4, 1] give g · bᵀ, [6, 4, 5].
        let b = u(&[6, 5], 5).reshape(&[6, 5, 1]);
        let g = u(&[6, 4], 6).reshape(&[6, 4, 1]);
        let ga = matmul_vjp_lhs(&g, &[6, 4, 5], &b);
        assert_eq!(ga.shape(), &[6, 4, 5]);
        let what = format!("{} per-example g . b^T", T::NAME);
        assert_outer_products(&ga, &real(&g), &real(&b), (0..6).map(|e| (e, e)), &what);
    }
    check::<f32>();
    check::<f64>();
    check::<Dual<f64>>();
}

/// `got` holds, for each pair `(i, j)` in order, the `4 × 5` outer product of row `i` of `a`
/// (rows of 4) and row `j` of `b` (rows of 5).
#[track_caller]
fn assert_outer_products<T: Element>(
    got: &Tensor<T>,
    a: &[f64],
    b: &[f64],
    pairs: impl Iterator<Item = (usize, usize)>,
    what: &str,
) {
    let want: Vec<f64> = pairs
        .flat_map(|(i, j)| {
            (0..4).flat_map(move |r| (0..5).map(move |s| a[i * 4 + r] * b[j * 5 + s]))
        })
        .collect();
    let abs: Vec<f64> = want.iter().map(|w| w.abs()).collect();
    assert_product(got, &want, &abs, 1, what);
}
