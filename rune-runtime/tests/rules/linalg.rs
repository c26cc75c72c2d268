//! `matmul`: 1-D operands, plain and batched products, batch axes broadcast on either side.

use rune_runtime::__private::rules::*;
use rune_runtime::{Element, Tensor};

use crate::common::{assert_close, tensor, uniform, Case};

/// Shape pairs covering every kind of operand: 1-D on either or both sides, 2-D, batched with
/// equal batches, batch axes broadcast on one side, the other, or both, and differing ranks.
const SHAPES: &[(&str, &[usize], &[usize])] = &[
    ("1-D . 1-D", &[3], &[3]),
    ("1-D . 2-D", &[3], &[3, 4]),
    ("2-D . 1-D", &[2, 3], &[3]),
    ("2-D . 2-D", &[2, 3], &[3, 4]),
    ("1-D . batched", &[3], &[2, 3, 4]),
    ("batched . 1-D", &[2, 2, 3], &[3]),
    ("batched . batched", &[2, 2, 3], &[2, 3, 4]),
    ("2-D . batched", &[2, 3], &[2, 3, 4]),
    ("batched . 2-D", &[2, 2, 3], &[3, 4]),
    ("[2,1,3,4] . [5,4,6]", &[2, 1, 3, 4], &[5, 4, 6]),
    (
        "[3,1,2,4] . [1,2,4,3]: both broadcast",
        &[3, 1, 2, 4],
        &[1, 2, 4, 3],
    ),
    (
        "[1,2,3] . [2,1,3,2]: size-1 batch",
        &[1, 2, 3],
        &[2, 1, 3, 2],
    ),
    ("[1,1,2,3] . [3,2]: unit batch", &[1, 1, 2, 3], &[3, 2]),
    (
        "[2,3] . [1,1,3,2]: unit batch right",
        &[2, 3],
        &[1, 1, 3, 2],
    ),
    ("[2,1,2,3] . [3,2]", &[2, 1, 2, 3], &[3, 2]),
];

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    for (i, &(label, sa, sb)) in SHAPES.iter().enumerate() {
        let a = uniform::<T>(sa, -1.0, 1.0, 400 + i as u64);
        let b = uniform::<T>(sb, -1.0, 1.0, 500 + i as u64);
        cases.push(Case::new(
            "matmul",
            label,
            vec![a.clone(), b.clone()],
            |x| x[0].matmul(&x[1]),
            |x, t| matmul_jvp(&x[0], &x[1], Some(&t[0]), Some(&t[1])),
            |x, g| {
                vec![
                    matmul_vjp_lhs(g, x[0].shape(), &x[1]),
                    matmul_vjp_rhs(g, &x[0], x[1].shape()),
                ]
            },
        ));
        // One side constant: the JVP with a `None` tangent and each VJP on its own.
        let b_const = b.clone();
        let b_const2 = b.clone();
        let b_const3 = b;
        cases.push(Case::new(
            "matmul",
            label,
            vec![a.clone()],
            move |x| x[0].matmul(&b_const),
            move |x, t| matmul_jvp(&x[0], &b_const2, Some(&t[0]), None),
            move |x, g| vec![matmul_vjp_lhs(g, x[0].shape(), &b_const3)],
        ));
        let (a1, a2, a3) = (a.clone(), a.clone(), a);
        cases.push(Case::new(
            "matmul",
            label,
            vec![uniform::<T>(sb, -1.0, 1.0, 600 + i as u64)],
            move |x| a1.matmul(&x[0]),
            move |x, t| matmul_jvp(&a2, &x[0], None, Some(&t[0])),
            move |x, g| vec![matmul_vjp_rhs(g, &a3, x[0].shape())],
        ));
    }
    view_cases(&mut cases);
    cases
}

/// `[2, 3, 4]` seen as two heads of width 2, as attention splits its projections: `[2, 2, 3, 2]`,
/// a permuted view.
fn heads<T: Element>(t: &Tensor<T>) -> Tensor<T> {
    t.reshape(&[2, 3, 2, 2]).permute(&[0, 2, 1, 3])
}

/// The inverse of [`heads`] on a row-major cotangent.
fn unheads<T: Element>(g: &Tensor<T>) -> Tensor<T> {
    g.permute(&[0, 2, 1, 3]).reshape(&[2, 3, 4])
}

/// Operands that are views, as attention's heads are: a permuted slice of a projection times
/// the transpose of another; the products and rules read them in their strides.
fn view_cases<T: Element>(cases: &mut Vec<Case<T>>) {
    let qkv = uniform::<T>(&[2, 3, 12], -1.0, 1.0, 450);
    let k = heads(&qkv.shrink(&[(0, 2), (0, 3), (4, 8)])).t();
    let q = heads(&qkv.shrink(&[(0, 2), (0, 3), (0, 4)]));
    let (k1, k2, k3) = (k.clone(), k.clone(), k);
    cases.push(Case::new(
        "matmul",
        "heads . transposed heads (views), left varies",
        vec![uniform::<T>(&[2, 3, 4], -1.0, 1.0, 451)],
        move |x| heads(&x[0]).matmul(&k1),
        move |x, t| matmul_jvp(&heads(&x[0]), &k2, Some(&heads(&t[0])), None),
        move |_, g| vec![unheads(&matmul_vjp_lhs(g, &[2, 2, 3, 2], &k3))],
    ));
    let (q1, q2, q3) = (q.clone(), q.clone(), q);
    cases.push(Case::new(
        "matmul",
        "heads . transposed heads (views), right varies",
        vec![uniform::<T>(&[2, 3, 4], -1.0, 1.0, 452)],
        move |x| q1.matmul(&heads(&x[0]).t()),
        move |x, t| matmul_jvp(&q2, &heads(&x[0]).t(), None, Some(&heads(&t[0]).t())),
        move |_, g| vec![unheads(&matmul_vjp_rhs(g, &q3, &[2, 2, 2, 3]).t())],
    ));
}

#[test]
fn views_multiply_as_their_row_major_copies() {
    let qkv = uniform::<f64>(&[2, 3, 12], -1.0, 1.0, 460);
    let q = heads(&qkv.shrink(&[(0, 2), (0, 3), (0, 4)]));
    let k = heads(&qkv.shrink(&[(0, 2), (0, 3), (4, 8)])).t();
    let v = heads(&qkv.shrink(&[(0, 2), (0, 3), (8, 12)]));
    assert!(!q.is_standard_layout() && !k.is_standard_layout());
    let copy = |t: &Tensor<f64>| Tensor::from_vec(t.to_vec(), t.shape());
    let close = |a: &Tensor<f64>, b: &Tensor<f64>| {
        assert_eq!(a.shape(), b.shape());
        assert_close(a, &b.to_vec(), 1e-14);
    };
    let s = q.matmul(&k);
    close(&s, &copy(&q).matmul(&copy(&k)));
    let g = uniform::<f64>(s.shape(), -1.0, 1.0, 461);
    close(
        &matmul_vjp_lhs(&g, q.shape(), &k),
        &matmul_vjp_lhs(&g, q.shape(), &copy(&k)),
    );
    close(
        &matmul_vjp_rhs(&g, &q, k.shape()),
        &matmul_vjp_rhs(&g, &copy(&q), k.shape()),
    );
    // A cotangent that is a view too, and a product with one right matrix (a tall GEMM over
    // the stacked left operand).
    let gt = g.t();
    close(
        &matmul_vjp_lhs(&gt, q.shape(), &k),
        &matmul_vjp_lhs(&copy(&gt), q.shape(), &k),
    );
    let w = uniform::<f64>(&[2, 5], -1.0, 1.0, 462);
    close(&v.matmul(&w), &copy(&v).matmul(&w));
    let gw = uniform::<f64>(&[2, 2, 3, 5], -1.0, 1.0, 463);
    close(
        &matmul_vjp_rhs(&gw, &v, w.shape()),
        &matmul_vjp_rhs(&gw, &copy(&v), w.shape()),
    );
}

/// `matmul` by the definition, one output element at a time, for operands of at least 2 axes
/// (an independent reference for the batched and broadcast cases).
fn naive_matmul(a: &Tensor<f64>, b: &Tensor<f64>) -> (Vec<usize>, Vec<f64>) {
    let (sa, sb) = (a.shape(), b.shape());
    let (m, k, n) = (sa[sa.len() - 2], sa[sa.len() - 1], sb[sb.len() - 1]);
    let rank = sa.len().max(sb.len());
    let pad = |s: &[usize]| {
        let mut p = vec![1; rank - s.len()];
        p.extend_from_slice(&s[..s.len() - 2]);
        p
    };
    let (ba, bb) = (pad(sa), pad(sb));
    let batch: Vec<usize> = ba.iter().zip(&bb).map(|(&x, &y)| x.max(y)).collect();
    let (av, bv) = (a.to_vec(), b.to_vec());
    let count: usize = batch.iter().product();
    let mut out = Vec::new();
    for flat in 0..count {
        // The multi-index of this batch element, and the operands' matrices it reads.
        let (mut rem, mut ia, mut ib) = (flat, 0, 0);
        let (mut stride_a, mut stride_b) = (1, 1);
        for ax in (0..rank - 2).rev() {
            let idx = rem % batch[ax];
            rem /= batch[ax];
            ia += if ba[ax] == 1 { 0 } else { idx * stride_a };
            ib += if bb[ax] == 1 { 0 } else { idx * stride_b };
            stride_a *= ba[ax];
            stride_b *= bb[ax];
        }
        for i in 0..m {
            for j in 0..n {
                let s: f64 = (0..k)
                    .map(|p| av[ia * m * k + i * k + p] * bv[ib * k * n + p * n + j])
                    .sum();
                out.push(s);
            }
        }
    }
    let mut shape = batch;
    shape.extend([m, n]);
    (shape, out)
}

#[test]
fn batched_products_match_the_definition() {
    let pairs: &[(&[usize], &[usize], &[usize])] = &[
        (&[2, 1, 3, 4], &[5, 4, 6], &[2, 5, 3, 6]),
        (&[3, 1, 2, 4], &[1, 2, 4, 3], &[3, 2, 2, 3]),
        (&[2, 3], &[4, 3, 2], &[4, 2, 2]),
        (&[4, 2, 3], &[3, 5], &[4, 2, 5]),
        (&[2, 2, 3], &[2, 3, 4], &[2, 2, 4]),
    ];
    for (i, &(sa, sb, expected)) in pairs.iter().enumerate() {
        let a = uniform::<f64>(sa, -1.0, 1.0, 700 + i as u64);
        let b = uniform::<f64>(sb, -1.0, 1.0, 800 + i as u64);
        let y = a.matmul(&b);
        let (shape, values) = naive_matmul(&a, &b);
        assert_eq!(y.shape(), expected);
        assert_eq!(shape, expected);
        assert_close(&y, &values, 1e-12);
    }
}

#[test]
fn transposed_operands_are_read_through_their_strides() {
    // a = [[1, 2], [3, 4], [5, 6]] stored transposed: its standard-layout copy is what counts.
    let a = Tensor::<f64>::from_array(
        ndarray::ArrayD::from_shape_vec(vec![2, 3], vec![1.0, 3.0, 5.0, 2.0, 4.0, 6.0])
            .unwrap()
            .reversed_axes(),
    );
    let b = tensor::<f64>(&[1.0, 0.0, 1.0, 1.0], &[2, 2]);
    assert_close(&a.matmul(&b), &[3.0, 2.0, 7.0, 4.0, 11.0, 6.0], 0.0);
}

/// `t` copied into a new row-major tensor.
fn standard<T: Element>(t: &Tensor<T>) -> Tensor<T> {
    Tensor::from_vec(t.to_vec(), t.shape())
}

/// Every element of `actual` equal to the one of `expected` in the same position, dual parts
/// included.
#[track_caller]
fn assert_same<T: Element>(what: &str, actual: &Tensor<T>, expected: &Tensor<T>) {
    assert_eq!(actual.shape(), expected.shape(), "{what}");
    assert_eq!(actual.to_vec(), expected.to_vec(), "{what}");
}

/// A `[rows, cols]` matrix in each layout a view can have: row-major, transposed, reversed
/// along either axis, and a column block of a wider matrix.
fn layouts<T: Element>(rows: usize, cols: usize, seed: u64) -> Vec<(&'static str, Tensor<T>)> {
    let m = uniform::<T>(&[rows, cols], -1.0, 1.0, seed);
    let wide = uniform::<T>(&[rows, cols + 3], -1.0, 1.0, seed + 1);
    vec![
        ("row-major", m.clone()),
        ("transposed", standard(&m.t()).t()),
        ("rows reversed", m.flip(&[0])),
        ("columns reversed", m.flip(&[1])),
        ("column block", wide.shrink(&[(0, rows), (2, cols + 2)])),
    ]
}

/// The product, its JVP and both VJPs of 2-D operands in any layout, alone or against a
/// batch, equal those of the operands' row-major copies.
fn strided_operands_match_row_major<T: Element>() {
    for (la, a) in layouts::<T>(3, 4, 900) {
        for (lb, b) in layouts::<T>(4, 5, 910) {
            let (a0, b0) = (standard(&a), standard(&b));
            let what = format!("{la} . {lb}");
            assert_same(&what, &a.matmul(&b), &a0.matmul(&b0));
            let g = uniform::<T>(&[3, 5], -1.0, 1.0, 920);
            assert_same(
                &what,
                &matmul_vjp_lhs(&g, &[3, 4], &b),
                &matmul_vjp_lhs(&g, &[3, 4], &b0),
            );
            assert_same(
                &what,
                &matmul_vjp_rhs(&g, &a, &[4, 5]),
                &matmul_vjp_rhs(&g, &a0, &[4, 5]),
            );
            let (da, db) = (a.flip(&[0, 1]), b.flip(&[0, 1]));
            let (da0, db0) = (standard(&da), standard(&db));
            assert_same(
                &what,
                &matmul_jvp(&a, &b, Some(&da), Some(&db)),
                &matmul_jvp(&a0, &b0, Some(&da0), Some(&db0)),
            );
        }
        // Against a batch on the other side.
        let a0 = standard(&a);
        let b3 = uniform::<T>(&[2, 4, 5], -1.0, 1.0, 930);
        assert_same(la, &a.matmul(&b3), &a0.matmul(&b3));
        let g3 = uniform::<T>(&[2, 3, 5], -1.0, 1.0, 940);
        assert_same(
            la,
            &matmul_vjp_rhs(&g3, &a, &[2, 4, 5]),
            &matmul_vjp_rhs(&g3, &a0, &[2, 4, 5]),
        );
        let a3 = uniform::<T>(&[2, 5, 3], -1.0, 1.0, 950);
        assert_same(la, &a3.matmul(&a), &a3.matmul(&a0));
        let g3 = uniform::<T>(&[2, 5, 4], -1.0, 1.0, 960);
        assert_same(
            la,
            &matmul_vjp_lhs(&g3, &[2, 5, 3], &a),
            &matmul_vjp_lhs(&g3, &[2, 5, 3], &a0),
        );
    }
}

#[test]
fn strided_matrices_enter_products_as_views() {
    strided_operands_match_row_major::<f32>();
    strided_operands_match_row_major::<f64>();
    strided_operands_match_row_major::<rune_runtime::Dual<f64>>();
}

#[test]
fn vector_times_vector_is_a_0d_inner_product() {
    let a = tensor::<f64>(&[1.0, 2.0, 3.0], &[3]);
    let b = tensor::<f64>(&[4.0, 5.0, 6.0], &[3]);
    let y = a.matmul(&b);
    assert_eq!(y.shape(), &[] as &[usize]);
    assert_eq!(y.item(), 32.0);
    let g = Tensor::scalar(2.0);
    let ga = matmul_vjp_lhs(&g, &[3], &b);
    let gb = matmul_vjp_rhs(&g, &a, &[3]);
    assert_eq!(ga.shape(), &[3]);
    assert_close(&ga, &[8.0, 10.0, 12.0], 0.0);
    assert_close(&gb, &[2.0, 4.0, 6.0], 0.0);
    let da = tensor::<f64>(&[1.0, 0.0, 0.0], &[3]);
    let db = tensor::<f64>(&[0.0, 1.0, 0.0], &[3]);
    // da.b + a.db = 4 + 2
    let t = matmul_jvp(&a, &b, Some(&da), Some(&db));
    assert_eq!(t.shape(), &[] as &[usize]);
    assert_eq!(t.item(), 6.0);
}

#[test]
fn vector_times_matrix_drops_the_row_axis() {
    let a = tensor::<f64>(&[1.0, 2.0], &[2]);
    let b = tensor::<f64>(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let y = a.matmul(&b);
    assert_eq!(y.shape(), &[3]);
    assert_close(&y, &[9.0, 12.0, 15.0], 0.0);
    let g = tensor::<f64>(&[1.0, 0.0, -1.0], &[3]);
    // b . g
    assert_close(&matmul_vjp_lhs(&g, &[2], &b), &[-2.0, -2.0], 0.0);
    // outer(a, g)
    let gb = matmul_vjp_rhs(&g, &a, &[2, 3]);
    assert_eq!(gb.shape(), &[2, 3]);
    assert_close(&gb, &[1.0, 0.0, -1.0, 2.0, 0.0, -2.0], 0.0);
    let da = tensor::<f64>(&[0.0, 1.0], &[2]);
    assert_close(&matmul_jvp(&a, &b, Some(&da), None), &[4.0, 5.0, 6.0], 0.0);
}

#[test]
fn matrix_times_vector_drops_the_column_axis() {
    let a = tensor::<f64>(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]);
    let b = tensor::<f64>(&[1.0, -1.0], &[2]);
    let y = a.matmul(&b);
    assert_eq!(y.shape(), &[3]);
    assert_close(&y, &[-1.0, -1.0, -1.0], 0.0);
    let g = tensor::<f64>(&[1.0, 2.0, 3.0], &[3]);
    // outer(g, b)
    let ga = matmul_vjp_lhs(&g, &[3, 2], &b);
    assert_eq!(ga.shape(), &[3, 2]);
    assert_close(&ga, &[1.0, -1.0, 2.0, -2.0, 3.0, -3.0], 0.0);
    // aᵀ g
    assert_close(&matmul_vjp_rhs(&g, &a, &[2]), &[22.0, 28.0], 0.0);
    let db = tensor::<f64>(&[1.0, 1.0], &[2]);
    assert_close(&matmul_jvp(&a, &b, None, Some(&db)), &[3.0, 7.0, 11.0], 0.0);
}

/// The cotangent of an operand broadcast along a batch axis sums over that axis.
#[test]
fn broadcast_batch_cotangents_sum_over_the_batch() {
    // a: [2, 1, 1, 2] (two row vectors), b: [3, 2, 1] with b[i] = [[i], [1]]. y: [2, 3, 1, 1].
    let a = tensor::<f64>(&[1.0, 2.0, 3.0, 4.0], &[2, 1, 1, 2]);
    let b = tensor::<f64>(&[0.0, 1.0, 1.0, 1.0, 2.0, 1.0], &[3, 2, 1]);
    let y = a.matmul(&b);
    assert_eq!(y.shape(), &[2, 3, 1, 1]);
    // y[p, i] = a[p, 0] * i + a[p, 1]
    assert_close(&y, &[2.0, 3.0, 4.0, 4.0, 7.0, 10.0], 0.0);
    let g = Tensor::<f64>::ones(&[2, 3, 1, 1]);
    // ga[p] = Σ_i b[i]ᵀ = [0 + 1 + 2, 3]
    let ga = matmul_vjp_lhs(&g, &[2, 1, 1, 2], &b);
    assert_eq!(ga.shape(), &[2, 1, 1, 2]);
    assert_close(&ga, &[3.0, 3.0, 3.0, 3.0], 0.0);
    // gb[i] = Σ_p a[p]ᵀ = [1 + 3, 2 + 4]
    let gb = matmul_vjp_rhs(&g, &a, &[3, 2, 1]);
    assert_eq!(gb.shape(), &[3, 2, 1]);
    assert_close(&gb, &[4.0, 6.0, 4.0, 6.0, 4.0, 6.0], 0.0);
}

/// Integer-valued products near 2^52 are exact in f64 and far from exact in f32: an f32
/// detour anywhere in the product or its rules would show.
#[test]
fn f64_products_stay_f64_accurate() {
    let big = 67_108_864.0; // 2^26
    let a = tensor::<f64>(&[big + 1.0, 3.0, 5.0, big - 1.0], &[2, 2]);
    let b = tensor::<f64>(&[big + 3.0, 1.0, 1.0, 7.0], &[2, 2]);
    // (2^26 + 1)(2^26 + 3) + 3 = 2^52 + 2^28 + 6, and so on, all below 2^53.
    let expected = [
        4_503_599_895_805_958.0,
        67_108_865.0 + 21.0,
        5.0 * (big + 3.0) + big - 1.0,
        5.0 + 7.0 * (big - 1.0),
    ];
    let y = a.matmul(&b);
    assert_eq!(y.to_vec(), expected);
    let a3 = Tensor::from_vec([a.to_vec(), a.to_vec()].concat(), &[2, 2, 2]);
    let b3 = Tensor::from_vec([b.to_vec(), b.to_vec()].concat(), &[2, 2, 2]);
    assert_eq!(a3.matmul(&b).to_vec(), [expected, expected].concat());
    assert_eq!(a3.matmul(&b3).to_vec(), [expected, expected].concat());
    // ga = g bᵀ with g = a: row 0 is [(2^26+1)(2^26+3) + 3, 2^26 + 1 + 21].
    let ga = matmul_vjp_lhs(&a, &[2, 2], &b);
    assert_eq!(ga.to_vec()[0], 4_503_599_895_805_958.0);
    assert_eq!(ga.to_vec()[1], 67_108_865.0 + 21.0);
    // gb = aᵀ g with g = b: element [0, 0] = (2^26+1)(2^26+3) + 5.
    let gb = matmul_vjp_rhs(&b, &a, &[2, 2]);
    assert_eq!(gb.to_vec()[0], 4_503_599_895_805_960.0);
}

/// A zero cotangent or tangent stays exactly zero against infinite entries of the other
/// operand.
#[test]
fn zero_cotangent_and_tangent_are_strong_zeros() {
    let a = tensor::<f64>(&[f64::INFINITY, 1.0], &[1, 2]);
    let b = tensor::<f64>(&[f64::INFINITY, 2.0], &[2, 1]);
    let g = Tensor::<f64>::zeros(&[1, 1]);
    assert_close(&matmul_vjp_lhs(&g, &[1, 2], &b), &[0.0, 0.0], 0.0);
    assert_close(&matmul_vjp_rhs(&g, &a, &[2, 1]), &[0.0, 0.0], 0.0);
    // da . b alone would be 0 * inf = NaN; the all-zero da adds nothing, a . db = 1.
    let zero = Tensor::<f64>::zeros(&[1, 2]);
    let db = tensor::<f64>(&[0.0, 1.0], &[2, 1]);
    let t = matmul_jvp(
        &tensor::<f64>(&[3.0, 1.0], &[1, 2]),
        &b,
        Some(&zero),
        Some(&db),
    );
    assert_close(&t, &[1.0], 0.0);
}

#[test]
fn mismatched_shapes_name_op_and_both_shapes() {
    let a = Tensor::<f64>::zeros(&[2, 3]);
    let b = Tensor::<f64>::zeros(&[4, 5]);
    let err = a.try_matmul(&b).unwrap_err();
    assert_eq!(err.op(), "matmul");
    let msg = err.to_string();
    assert!(msg.contains("[2, 3]") && msg.contains("[4, 5]"), "{msg}");

    let err = Tensor::<f64>::zeros(&[2, 3, 4])
        .try_matmul(&Tensor::zeros(&[3, 4, 5]))
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("matmul:") && msg.contains("[2, 3, 4]") && msg.contains("[3, 4, 5]"),
        "{msg}"
    );

    let err = Tensor::<f64>::scalar(1.0)
        .try_matmul(&Tensor::zeros(&[3]))
        .unwrap_err();
    assert!(err.to_string().contains("[]"), "{err}");

    let panic =
        std::panic::catch_unwind(|| Tensor::<f64>::zeros(&[3]).matmul(&Tensor::zeros(&[4])))
            .unwrap_err();
    let msg = panic.downcast_ref::<String>().unwrap();
    assert!(
        msg.starts_with("matmul:") && msg.contains("[3]") && msg.contains("[4]"),
        "{msg}"
    );
}

#[test]
fn rules_reject_a_cotangent_of_the_wrong_shape() {
    let b = Tensor::<f64>::zeros(&[3, 4]);
    let panic =
        std::panic::catch_unwind(|| matmul_vjp_lhs(&Tensor::<f64>::ones(&[2, 5]), &[2, 3], &b))
            .unwrap_err();
    let msg = panic.downcast_ref::<String>().unwrap();
    assert!(
        msg.starts_with("matmul:") && msg.contains("[2, 5]"),
        "{msg}"
    );
}

#[test]
fn empty_contraction_gives_zeros() {
    let a = Tensor::<f64>::zeros(&[2, 0]);
    let b = Tensor::<f64>::zeros(&[0, 3]);
    let y = a.matmul(&b);
    assert_eq!(y.shape(), &[2, 3]);
    assert_close(&y, &[0.0; 6], 0.0);
}
