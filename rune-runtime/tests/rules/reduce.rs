//! Reductions over all axes and over axis lists (negative axes, keepdims both ways, no axes),
//! with hand-derived values for ties, zeros in products, and stability.

use rune_runtime::__private::rules::*;
use rune_runtime::{Element, Tensor};

use crate::common::{assert_close, tensor, uniform, Case};

/// Well-separated values in a random order: no ties, so `max`/`min` are smooth there.
pub fn distinct<T: Element>(shape: &[usize], seed: u64) -> Tensor<T> {
    let n: usize = shape.iter().product();
    let keys = Tensor::<f64>::rand_uniform(&[n], 0.0, 1.0, seed).to_vec();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| keys[a].total_cmp(&keys[b]));
    let mut values = vec![0.0; n];
    for (rank, &i) in order.iter().enumerate() {
        values[i] = rank as f64 * 0.5 - n as f64 * 0.25;
    }
    tensor(&values, shape)
}

type Fwd<T> = fn(&Tensor<T>, &[isize], bool) -> Tensor<T>;
/// `(x, y, axes, keepdims, dx)`
type Jvp<T> = fn(&Tensor<T>, &Tensor<T>, &[isize], bool, &Tensor<T>) -> Tensor<T>;
/// `(g, x, y, axes, keepdims)`
type Vjp<T> = fn(&Tensor<T>, &Tensor<T>, &Tensor<T>, &[isize], bool) -> Tensor<T>;

struct AxesOp<T: Element> {
    name: &'static str,
    f: Fwd<T>,
    jvp: Jvp<T>,
    vjp: Vjp<T>,
    input: fn(&[usize], u64) -> Tensor<T>,
}

fn axes_ops<T: Element>() -> Vec<AxesOp<T>> {
    let smooth: fn(&[usize], u64) -> Tensor<T> = |s, seed| uniform(s, -2.0, 2.0, seed);
    vec![
        AxesOp {
            name: "sum_axes",
            f: |x, a, k| x.sum_axes(a, k),
            jvp: |_, _, a, k, dx| sum_axes_jvp(a, k, dx),
            vjp: |g, x, _, a, k| sum_axes_vjp(g, x.shape(), a, k),
            input: smooth,
        },
        AxesOp {
            name: "mean_axes",
            f: |x, a, k| x.mean_axes(a, k),
            jvp: |_, _, a, k, dx| mean_axes_jvp(a, k, dx),
            vjp: |g, x, _, a, k| mean_axes_vjp(g, x.shape(), a, k),
            input: smooth,
        },
        AxesOp {
            name: "max_axes",
            f: |x, a, k| x.max_axes(a, k),
            jvp: max_axes_jvp,
            vjp: max_axes_vjp,
            input: distinct,
        },
        AxesOp {
            name: "min_axes",
            f: |x, a, k| x.min_axes(a, k),
            jvp: min_axes_jvp,
            vjp: min_axes_vjp,
            input: distinct,
        },
        AxesOp {
            name: "prod_axes",
            f: |x, a, k| x.prod_axes(a, k),
            jvp: |x, _, a, k, dx| prod_axes_jvp(x, a, k, dx),
            vjp: |g, x, _, a, k| prod_axes_vjp(g, x, a, k),
            input: |s, seed| uniform(s, -1.5, 1.5, seed),
        },
        AxesOp {
            name: "logsumexp_axes",
            f: |x, a, k| x.logsumexp_axes(a, k),
            jvp: logsumexp_axes_jvp,
            vjp: logsumexp_axes_vjp,
            input: smooth,
        },
    ]
}

/// `(label, shape, axes, keepdims)`
pub const AXES_CASES: &[(&str, &[usize], &[isize], bool)] = &[
    ("middle axis", &[2, 3, 4], &[1], false),
    (
        "negative and first axes, keepdims",
        &[2, 3, 4],
        &[-1, 0],
        true,
    ),
    ("outer axes", &[2, 3, 4], &[0, 2], false),
    ("all axes, keepdims", &[2, 3, 4], &[0, 1, 2], true),
    ("all axes", &[3, 2], &[1, 0], false),
    ("no axes", &[3, 4], &[], false),
    ("1-d, keepdims", &[5], &[0], true),
    // Wide planes across a strided axis take the plane-by-plane kernels.
    ("first axis of a wide tensor", &[3, 20], &[0], false),
    (
        "middle axis of a wide tensor, keepdims",
        &[2, 3, 16],
        &[-2],
        true,
    ),
];

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let mut cases = Vec::new();
    for op in axes_ops::<T>() {
        for (i, &(label, shape, axes, keepdims)) in AXES_CASES.iter().enumerate() {
            let (f, jvp, vjp) = (op.f, op.jvp, op.vjp);
            let (a1, a2, a3) = (axes.to_vec(), axes.to_vec(), axes.to_vec());
            cases.push(Case::new(
                op.name,
                label,
                vec![(op.input)(shape, 400 + i as u64)],
                move |x| f(&x[0], &a1, keepdims),
                move |x, t| jvp(&x[0], &f(&x[0], &a2, keepdims), &a2, keepdims, &t[0]),
                move |x, g| vec![vjp(g, &x[0], &f(&x[0], &a3, keepdims), &a3, keepdims)],
            ));
        }
    }
    cases.push(Case::new(
        "prod_axes",
        "zeros: one and two per group",
        vec![tensor(
            &[2.0, 0.0, 3.0, 0.0, 1.5, 0.0, -1.0, 2.0, 0.5],
            &[3, 3],
        )],
        |x| x[0].prod_axes(&[1], false),
        |x, t| prod_axes_jvp(&x[0], &[1], false, &t[0]),
        |x, g| vec![prod_axes_vjp(g, &x[0], &[1], false)],
    ));

    let x = uniform::<T>(&[3, 4], -2.0, 2.0, 450);
    cases.push(Case::new(
        "sum",
        "all",
        vec![x.clone()],
        |x| x[0].sum(),
        |_, t| sum_jvp(&t[0]),
        |x, g| vec![sum_vjp(g, x[0].shape())],
    ));
    cases.push(Case::new(
        "sum",
        "0-d",
        vec![uniform::<T>(&[], -2.0, 2.0, 451)],
        |x| x[0].sum(),
        |_, t| sum_jvp(&t[0]),
        |x, g| vec![sum_vjp(g, x[0].shape())],
    ));
    cases.push(Case::new(
        "mean",
        "all",
        vec![x.clone()],
        |x| x[0].mean(),
        |_, t| mean_jvp(&t[0]),
        |x, g| vec![mean_vjp(g, x[0].shape())],
    ));
    cases.push(Case::new(
        "logsumexp",
        "all",
        vec![x],
        |x| x[0].logsumexp(),
        |x, t| logsumexp_jvp(&x[0], &x[0].logsumexp(), &t[0]),
        |x, g| vec![logsumexp_vjp(g, &x[0], &x[0].logsumexp())],
    ));
    let d = distinct::<T>(&[3, 4], 452);
    cases.push(Case::new(
        "max",
        "all",
        vec![d.clone()],
        |x| x[0].max(),
        |x, t| max_jvp(&x[0], &x[0].max(), &t[0]),
        |x, g| vec![max_vjp(g, &x[0], &x[0].max())],
    ));
    cases.push(Case::new(
        "min",
        "all",
        vec![d],
        |x| x[0].min(),
        |x, t| min_jvp(&x[0], &x[0].min(), &t[0]),
        |x, g| vec![min_vjp(g, &x[0], &x[0].min())],
    ));
    cases.push(Case::new(
        "prod",
        "all",
        vec![uniform::<T>(&[2, 3], -1.5, 1.5, 453)],
        |x| x[0].prod(),
        |x, t| prod_jvp(&x[0], &t[0]),
        |x, g| vec![prod_vjp(g, &x[0])],
    ));
    cases.push(Case::new(
        "prod",
        "one zero",
        vec![tensor(&[1.5, 0.0, -2.0, 0.5], &[2, 2])],
        |x| x[0].prod(),
        |x, t| prod_jvp(&x[0], &t[0]),
        |x, g| vec![prod_vjp(g, &x[0])],
    ));
    cases
}

fn scalar(v: f64) -> Tensor<f64> {
    Tensor::scalar(v)
}

#[test]
fn sum_axes_values_and_shapes() {
    // x[i, j, k] = 12 i + 4 j + k
    let x = Tensor::<f64>::arange(24);
    let x = Tensor::from_vec(x.to_vec(), &[2, 3, 4]);
    // Over j: 36 i + 12 + 3 k.
    let s = x.sum_axes(&[1], false);
    assert_eq!(s.shape(), &[2, 4]);
    assert_close(&s, &[12.0, 15.0, 18.0, 21.0, 48.0, 51.0, 54.0, 57.0], 0.0);
    assert_eq!(x.sum_axes(&[1], true).shape(), &[2, 1, 4]);
    // Over i and k: 48 + 32 j + 12.
    let s = x.sum_axes(&[-1, 0], true);
    assert_eq!(s.shape(), &[1, 3, 1]);
    assert_close(&s, &[60.0, 92.0, 124.0], 0.0);
    assert_eq!(x.sum().shape(), &[] as &[usize]);
    assert_close(&x.sum(), &[276.0], 0.0);
    assert_eq!(x.max_axes(&[0, 1, 2], true).shape(), &[1, 1, 1]);
    assert_close(&x.max_axes(&[0, 2], false), &[15.0, 19.0, 23.0], 0.0);
    assert_close(
        &x.min_axes(&[-2], false),
        &[0.0, 1.0, 2.0, 3.0, 12.0, 13.0, 14.0, 15.0],
        0.0,
    );
}

#[test]
fn empty_axes_reduce_nothing() {
    let x = tensor::<f64>(&[1.0, -2.0, 3.0, 4.0], &[2, 2]);
    for keepdims in [false, true] {
        assert_eq!(x.sum_axes(&[], keepdims), x);
        assert_eq!(x.max_axes(&[], keepdims), x);
        assert_eq!(x.prod_axes(&[], keepdims), x);
        assert_eq!(x.mean_axes(&[], keepdims), x);
        assert_close(
            &x.logsumexp_axes(&[], keepdims),
            &[1.0, -2.0, 3.0, 4.0],
            1e-15,
        );
    }
    let g = tensor::<f64>(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    assert_eq!(sum_axes_vjp(&g, &[2, 2], &[], false), g);
    assert_eq!(max_axes_vjp(&g, &x, &x, &[], false), g);
    assert_eq!(prod_axes_vjp(&g, &x, &[], true), g);
}

#[test]
fn empty_reductions_give_the_identity() {
    let e = Tensor::<f64>::zeros(&[2, 0]);
    assert_close(&e.sum_axes(&[1], false), &[0.0, 0.0], 0.0);
    assert_close(&e.prod_axes(&[1], false), &[1.0, 1.0], 0.0);
    assert_eq!(e.max().item(), f64::NEG_INFINITY);
    assert_eq!(e.min().item(), f64::INFINITY);
    assert_eq!(e.logsumexp().item(), f64::NEG_INFINITY);
    assert!(e.mean().item().is_nan());
}

#[test]
fn mean_is_sum_over_count() {
    let x = uniform::<f64>(&[3, 4, 5], -2.0, 2.0, 7);
    assert_close(&x.mean(), &[x.sum().item() / 60.0], 1e-14);
    let m = x.mean_axes(&[0, -1], false);
    let s = x.sum_axes(&[0, -1], false);
    assert_close(&m, &s.map(|v| v / 15.0).to_vec(), 1e-14);
    let x32 = uniform::<f32>(&[4, 3], -2.0, 2.0, 8);
    let expected: Vec<f64> = x32
        .sum_axes(&[1], true)
        .to_vec()
        .iter()
        .map(|&v| v as f64 / 3.0)
        .collect();
    assert_close(&x32.mean_axes(&[1], true), &expected, 1e-6);
}

#[test]
fn logsumexp_is_ln_sum_exp() {
    let x = uniform::<f64>(&[3, 4], -3.0, 3.0, 9);
    let direct = x.map(|v| v.exp()).sum_axes(&[1], false).map(|v| v.ln());
    assert_close(&x.logsumexp_axes(&[-1], false), &direct.to_vec(), 1e-14);
    let direct = x.map(|v| v.exp()).sum().item().ln();
    assert_close(&x.logsumexp(), &[direct], 1e-14);
    let direct = x.map(|v| v.exp()).sum_axes(&[0], true).map(|v| v.ln());
    let y = x.logsumexp_axes(&[0], true);
    assert_eq!(y.shape(), &[1, 4]);
    assert_close(&y, &direct.to_vec(), 1e-14);
}

#[test]
fn logsumexp_is_stable() {
    let big = tensor::<f32>(&[1000.0, 1000.0, -1000.0, -1000.0], &[2, 2]);
    let y = big.logsumexp_axes(&[1], false);
    assert_close(&y, &[1000.0 + 2f64.ln(), -1000.0 + 2f64.ln()], 1e-6);
    let inf = tensor::<f64>(
        &[f64::NEG_INFINITY, f64::NEG_INFINITY, f64::INFINITY, 0.0],
        &[2, 2],
    );
    let y = inf.logsumexp_axes(&[1], false).to_vec();
    assert_eq!(y, vec![f64::NEG_INFINITY, f64::INFINITY]);
}

#[test]
fn logsumexp_vjp_is_softmax() {
    // x = [0, ln 3]: exp(x - y) = [1/4, 3/4].
    let x = tensor::<f64>(&[0.0, 3f64.ln()], &[2]);
    let y = x.logsumexp();
    assert_close(&y, &[4f64.ln()], 1e-15);
    assert_close(&logsumexp_vjp(&scalar(2.0), &x, &y), &[0.5, 1.5], 1e-15);
    let dx = tensor::<f64>(&[4.0, 8.0], &[2]);
    assert_close(&logsumexp_jvp(&x, &y, &dx), &[7.0], 1e-15);
}

#[test]
fn max_and_min_split_ties_evenly() {
    let x = tensor::<f64>(&[1.0, 3.0, 3.0, 2.0], &[4]);
    let y = x.max();
    assert_close(&max_vjp(&scalar(5.0), &x, &y), &[0.0, 2.5, 2.5, 0.0], 0.0);
    let dx = tensor::<f64>(&[1.0, 2.0, 4.0, 8.0], &[4]);
    assert_close(&max_jvp(&x, &y, &dx), &[3.0], 0.0);

    let x = tensor::<f64>(&[1.0, 5.0, 5.0, 4.0, 4.0, 4.0], &[2, 3]);
    let y = x.max_axes(&[1], false);
    assert_close(&y, &[5.0, 4.0], 0.0);
    let g = tensor::<f64>(&[1.0, 3.0], &[2]);
    assert_close(
        &max_axes_vjp(&g, &x, &y, &[1], false),
        &[0.0, 0.5, 0.5, 1.0, 1.0, 1.0],
        1e-15,
    );
    let dx = tensor::<f64>(&[7.0, 1.0, 2.0, 3.0, 6.0, 9.0], &[2, 3]);
    assert_close(&max_axes_jvp(&x, &y, &[1], false, &dx), &[1.5, 6.0], 1e-15);

    // Columns [1, 1] (tie) and [2, 3].
    let x = tensor::<f64>(&[1.0, 2.0, 1.0, 3.0], &[2, 2]);
    let y = x.min_axes(&[0], true);
    assert_eq!(y.shape(), &[1, 2]);
    let g = tensor::<f64>(&[2.0, 6.0], &[1, 2]);
    assert_close(
        &min_axes_vjp(&g, &x, &y, &[0], true),
        &[1.0, 6.0, 1.0, 0.0],
        0.0,
    );
    assert_close(
        &min_vjp(&scalar(4.0), &x, &x.min()),
        &[2.0, 0.0, 2.0, 0.0],
        0.0,
    );
}

/// The choosers' rules over rows (the reduced axis last in a row-major tensor, one loop per
/// row) and over a transposed view (the mask through views) against the definition: each
/// group's cotangent split among its ties, its tangent the mean of the ties' tangents. Dual
/// numbers carry a cotangent's tangent through the split (the Hessian pass of a `min`), and a
/// broadcast cotangent is what `sum`'s VJP hands over.
#[test]
fn choosers_over_rows_and_views_follow_the_definition() {
    use rune_runtime::Dual;
    // Four rows of five with ties: values from a small set.
    let values: Vec<f64> = (0..20)
        .map(|k| ((k * 7) % 3) as f64 - ((k / 5) % 2) as f64)
        .collect();
    let dual = |re: f64, du: f64| Dual::new(re, du);
    let x = Tensor::from_vec(values.iter().map(|&v| dual(v, 0.0)).collect(), &[4, 5]);
    let dx = Tensor::from_vec((0..20).map(|k| dual(k as f64, 0.5)).collect(), &[4, 5]);
    let g = Tensor::from_vec(
        (0..4)
            .map(|r| dual(r as f64 + 1.0, 10.0 * r as f64))
            .collect(),
        &[4],
    );
    for max in [false, true] {
        // The definition, row by row.
        let (mut vjp, mut jvp) = (vec![(0.0, 0.0); 20], vec![(0.0, 0.0); 4]);
        for r in 0..4 {
            let row = &values[r * 5..r * 5 + 5];
            let pick = if max {
                row.iter().cloned().fold(f64::MIN, f64::max)
            } else {
                row.iter().cloned().fold(f64::MAX, f64::min)
            };
            let ties: Vec<usize> = (0..5).filter(|&j| row[j] == pick).collect();
            let n = ties.len() as f64;
            for &j in &ties {
                vjp[r * 5 + j] = ((r as f64 + 1.0) / n, 10.0 * r as f64 / n);
                jvp[r].0 += (r * 5 + j) as f64 / n;
                jvp[r].1 += 0.5 / n;
            }
        }
        let reduce = |x: &Tensor<Dual<f64>>, axis: isize| {
            if max {
                x.max_axes(&[axis], false)
            } else {
                x.min_axes(&[axis], false)
            }
        };
        let rules = |x: &Tensor<Dual<f64>>, dx: &Tensor<Dual<f64>>, axis: isize| {
            let y = reduce(x, axis);
            if max {
                (
                    max_axes_vjp(&g, x, &y, &[axis], false),
                    max_axes_jvp(x, &y, &[axis], false, dx),
                )
            } else {
                (
                    min_axes_vjp(&g, x, &y, &[axis], false),
                    min_axes_jvp(x, &y, &[axis], false, dx),
                )
            }
        };
        assert!(x.t().as_slice().is_none(), "the transposed view is strided");
        let (rows_vjp, rows_jvp) = rules(&x, &dx, 1);
        let (view_vjp, view_jvp) = rules(&x.t(), &dx.t(), 0);
        for (got, layout) in [(rows_vjp, "rows"), (view_vjp.t(), "view")] {
            let got: Vec<(f64, f64)> = got.to_vec().iter().map(|d| (d.re, d.du)).collect();
            assert_eq!(got, vjp, "{layout} VJP, max {max}");
        }
        for (got, layout) in [(rows_jvp, "rows"), (view_jvp, "view")] {
            for (d, e) in got.to_vec().iter().zip(&jvp) {
                assert!(
                    (d.re - e.0).abs() < 1e-12 && (d.du - e.1).abs() < 1e-12,
                    "{layout} JVP"
                );
            }
        }
    }
    // A cotangent broadcast from one number, as `sum`'s VJP gives it, and in f32.
    let xr: Tensor<f32> = tensor(&values, &[4, 5]);
    let y = xr.min_axes(&[1], false);
    let ones = Tensor::<f32>::scalar(2.0).broadcast_to(&[4]);
    let got = min_axes_vjp(&ones, &xr, &y, &[1], false).to_vec();
    for r in 0..4 {
        let row = &values[r * 5..r * 5 + 5];
        let pick = row.iter().cloned().fold(f64::MAX, f64::min);
        let n = row.iter().filter(|&&v| v == pick).count() as f32;
        for j in 0..5 {
            let e = if row[j] == pick { 2.0 / n } else { 0.0 };
            assert_eq!(got[r * 5 + j], e);
        }
    }
}

#[test]
fn max_propagates_nan_and_its_gradient_goes_there() {
    let x = tensor::<f64>(&[1.0, f64::NAN, 3.0], &[3]);
    let y = x.max();
    assert!(y.item().is_nan());
    assert!(x.min().item().is_nan());
    let g = max_vjp(&scalar(1.0), &x, &y);
    assert_close(&g, &[0.0, 1.0, 0.0], 0.0);
}

#[test]
fn prod_gradient_is_exact_at_zeros() {
    let one = scalar(1.0);
    let x = tensor::<f64>(&[2.0, 3.0, 0.0], &[3]);
    assert_close(&x.prod(), &[0.0], 0.0);
    assert_close(&prod_vjp(&one, &x), &[0.0, 0.0, 6.0], 0.0);
    assert_close(&prod_jvp(&x, &tensor(&[1.0, 1.0, 1.0], &[3])), &[6.0], 0.0);
    let x = tensor::<f64>(&[0.0, 3.0, 0.0], &[3]);
    assert_close(&prod_vjp(&one, &x), &[0.0, 0.0, 0.0], 0.0);
    assert_close(&prod_jvp(&x, &tensor(&[1.0, 1.0, 1.0], &[3])), &[0.0], 0.0);
    let x = tensor::<f64>(&[2.0, 3.0, 4.0], &[3]);
    assert_close(&prod_vjp(&scalar(2.0), &x), &[24.0, 16.0, 12.0], 0.0);

    // Rows [2, 3, 0] and [4, 5, 6].
    let x = tensor::<f64>(&[2.0, 3.0, 0.0, 4.0, 5.0, 6.0], &[2, 3]);
    let g = tensor::<f64>(&[1.0, 1.0], &[2]);
    assert_close(
        &prod_axes_vjp(&g, &x, &[-1], false),
        &[0.0, 0.0, 6.0, 30.0, 24.0, 20.0],
        0.0,
    );
    // Columns [2, 0, 3] and [0, 5, 4].
    let x = tensor::<f64>(&[2.0, 0.0, 0.0, 5.0, 3.0, 4.0], &[3, 2]);
    let g = tensor::<f64>(&[1.0, 1.0], &[1, 2]);
    assert_close(
        &prod_axes_vjp(&g, &x, &[0], true),
        &[0.0, 20.0, 6.0, 0.0, 0.0, 0.0],
        0.0,
    );
    let dx = tensor::<f64>(&[1.0, 1.0, 1.0, 1.0, 1.0, 1.0], &[3, 2]);
    assert_close(&prod_axes_jvp(&x, &[0], false, &dx), &[6.0, 20.0], 0.0);
    // Both axes of [[1, 2], [0, 3]]: only the zero has a nonzero gradient.
    let x = tensor::<f64>(&[1.0, 2.0, 0.0, 3.0], &[2, 2]);
    assert_close(
        &prod_axes_vjp(&tensor(&[1.0], &[1, 1]), &x, &[0, 1], true),
        &[0.0, 0.0, 6.0, 0.0],
        0.0,
    );
}

/// Columns [2, 3, 0], [0, 3, 0], [2, 3, 4] of a wide tensor (the plane-by-plane kernel).
#[test]
fn prod_gradient_is_exact_at_zeros_across_planes() {
    let lines = [
        ([2.0, 3.0, 0.0], [0.0, 0.0, 6.0]),
        ([0.0, 3.0, 0.0], [0.0; 3]),
        ([2.0, 3.0, 4.0], [12.0, 8.0, 6.0]),
    ];
    let cols = 18;
    let x: Vec<f64> = (0..3 * cols)
        .map(|k| lines[(k % cols) % 3].0[k / cols])
        .collect();
    let expected: Vec<f64> = (0..3 * cols)
        .map(|k| lines[(k % cols) % 3].1[k / cols])
        .collect();
    let x = tensor::<f64>(&x, &[3, cols]);
    let g = Tensor::<f64>::ones(&[cols]);
    assert_close(&prod_axes_vjp(&g, &x, &[0], false), &expected, 0.0);
    let jvp: Vec<f64> = (0..cols).map(|c| lines[c % 3].1.iter().sum()).collect();
    assert_close(
        &prod_axes_jvp(&x, &[0], false, &Tensor::ones(&[3, cols])),
        &jvp,
        0.0,
    );
}

#[test]
fn zero_cotangents_stay_zero() {
    let x = tensor::<f64>(&[f64::INFINITY, 2.0], &[2]);
    assert_close(&prod_vjp(&scalar(0.0), &x), &[0.0, 0.0], 0.0);
    assert_close(&prod_jvp(&x, &tensor(&[0.0, 0.0], &[2])), &[0.0], 0.0);
    let x = tensor::<f64>(&[f64::INFINITY, 1.0], &[2]);
    let y = x.logsumexp();
    assert_close(&logsumexp_vjp(&scalar(0.0), &x, &y), &[0.0, 0.0], 0.0);
}

#[test]
fn bad_axes_name_the_op_and_the_shape() {
    let x = Tensor::<f64>::zeros(&[2, 3]);
    let err = x.try_sum_axes(&[2], false).unwrap_err();
    assert_eq!(err.op(), "sum_axes");
    assert!(
        err.to_string().contains("[2, 3]") && err.to_string().contains("axis 2"),
        "{err}"
    );
    let err = x.try_sum_axes(&[0, -2], false).unwrap_err();
    assert!(
        err.to_string().contains("repeat") && err.to_string().contains("[2, 3]"),
        "{err}"
    );
    for (name, f) in [
        (
            "max_axes:",
            Box::new(|| drop(x.max_axes(&[-3], false))) as Box<dyn Fn()>,
        ),
        ("prod_axes:", Box::new(|| drop(x.prod_axes(&[1, 1], true)))),
        (
            "logsumexp_axes:",
            Box::new(|| drop(x.logsumexp_axes(&[5], true))),
        ),
    ] {
        let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_err();
        let msg = panic.downcast_ref::<String>().unwrap();
        assert!(msg.starts_with(name) && msg.contains("[2, 3]"), "{msg}");
    }
    assert!(x.try_mean_axes(&[1], false).is_ok());
    assert_eq!(x.try_min_axes(&[7], false).unwrap_err().op(), "min_axes");
}

#[test]
fn rules_reject_a_cotangent_of_the_wrong_shape() {
    let g = Tensor::<f64>::zeros(&[3]);
    let panic = std::panic::catch_unwind(|| sum_axes_vjp(&g, &[2, 3], &[1], false)).unwrap_err();
    let msg = panic.downcast_ref::<String>().unwrap();
    assert!(
        msg.starts_with("sum_axes_vjp:") && msg.contains("[2, 3]"),
        "{msg}"
    );
}

/// The relative error of an f32 result against an f64 reference.
fn rel_err(actual: f32, exact: f64) -> f64 {
    ((actual as f64 - exact) / exact).abs()
}

/// The f32 inputs of the accuracy tests, and their sum computed in f64.
fn accuracy_inputs() -> Vec<(&'static str, Vec<f32>, f64)> {
    let n = 1_000_000;
    let tenths = vec![0.1f32; n];
    let alternating: Vec<f32> = (0..n)
        .map(|i| if i % 2 == 0 { 1e4 } else { -1e4 + 0.1 })
        .collect();
    [("10^6 x 0.1", tenths), ("+1e4, -1e4 + 0.1", alternating)]
        .into_iter()
        .map(|(label, v)| {
            let exact = v.iter().map(|&x| x as f64).sum::<f64>();
            (label, v, exact)
        })
        .collect()
}

#[test]
fn f32_sums_of_a_million_values_are_accurate() {
    let tol = 1e-6;
    for (label, v, exact) in accuracy_inputs() {
        let n = v.len();
        let check = |what: &str, got: f32, exact: f64| {
            let e = rel_err(got, exact);
            assert!(
                e <= tol,
                "{label}: {what} = {got}, exact {exact}, error {e:e}"
            );
        };
        let x = Tensor::from_vec(v.clone(), &[n]);
        check("sum", x.sum().item(), exact);
        check("mean", x.mean().item(), exact / n as f64);
        check("sum_axes", x.sum_axes(&[0], false).item(), exact);
        check(
            "mean_axes",
            x.mean_axes(&[0], false).item(),
            exact / n as f64,
        );
        // Not contiguous: every other element of a [2n] tensor (zeros in between).
        let mut spread = vec![0f32; 2 * n];
        for (i, &x) in v.iter().enumerate() {
            spread[2 * i] = x;
        }
        let s = Tensor::from_vec(spread, &[n, 2]);
        check(
            "sum over strided lanes",
            s.sum_axes(&[0], false).to_vec()[0],
            exact,
        );
        // A column of a [n, 16] tensor (plane by plane), and of its [n, 1] broadcast gradient.
        let mut wide = vec![0f32; 16 * n];
        for (i, &x) in v.iter().enumerate() {
            wide[16 * i] = x;
        }
        let w = Tensor::from_vec(wide, &[n, 16]);
        check(
            "sum over planes",
            w.sum_axes(&[0], false).to_vec()[0],
            exact,
        );
        check(
            "sum_to_shape [n, 16] -> [16]",
            rune_runtime::sum_to_shape(&w, &[16]).to_vec()[0],
            exact,
        );
        let t = w.t();
        check(
            "sum_to_shape [16, n] -> [16, 1]",
            rune_runtime::sum_to_shape(&t, &[16, 1]).to_vec()[0],
            exact,
        );
        let col = Tensor::from_vec(v.clone(), &[n, 1]);
        check(
            "sum_to_shape [n, 1] -> [1]",
            rune_runtime::sum_to_shape(&col, &[1]).item(),
            exact,
        );
        // The whole of a non-contiguous view.
        check("sum of a transposed tensor", t.sum().item(), exact);
    }
}

/// Magnitudes where `logsumexp`'s result rounds by far more than its inputs' spacing: `(c, d)`
/// with `c` the magnitude and `d` a spacing exactly representable at `c`.
fn large_magnitudes<T: Element>() -> Vec<(f64, f64)> {
    if T::NAME == "f32" {
        vec![(1e4, 1.0), (1e5, 1.0), (1e7, 1.0), (1e8, 8.0)]
    } else {
        vec![(1e4, 1.0), (1e8, 1.0), (1e17, 16.0)]
    }
}

fn logsumexp_gradient_is_softmax_at_large_inputs<T: Element>() {
    let tol = if T::NAME == "f32" { 1e-6 } else { 1e-14 };
    for (c, d) in large_magnitudes::<T>() {
        for c in [c, -c] {
            // Equal inputs: the gradient is uniform, whatever the rounding of the result.
            for n in [2usize, 4] {
                let x = tensor::<T>(&vec![c; n], &[n]);
                let y = x.logsumexp();
                let u = 1.0 / n as f64;
                let g = logsumexp_vjp(&Tensor::scalar(T::from_f64(3.0)), &x, &y);
                assert_close(&g, &vec![3.0 * u; n], tol);
                let dx = tensor::<T>(&(0..n).map(|i| i as f64).collect::<Vec<_>>(), &[n]);
                let mean = (n - 1) as f64 / 2.0;
                assert_close(&logsumexp_jvp(&x, &y, &dx), &[mean], tol);
            }
            // Inputs `d` apart: weights 1 / (1 + e^d) and e^d / (1 + e^d).
            let x = tensor::<T>(&[c, c + d], &[2]);
            let y = x.logsumexp();
            let lo = 1.0 / (1.0 + d.exp());
            let w = [lo, 1.0 - lo];
            assert_close(&logsumexp_vjp(&Tensor::scalar(T::one()), &x, &y), &w, tol);
            // Over an axis, rows at `+c` and `-c`, with keepdims both ways; and over columns.
            let x = tensor::<T>(&[c, c, c, -c, -c, -c], &[2, 3]);
            for keepdims in [false, true] {
                let y = x.logsumexp_axes(&[1], keepdims);
                let g = if keepdims {
                    tensor::<T>(&[3.0, 6.0], &[2, 1])
                } else {
                    tensor::<T>(&[3.0, 6.0], &[2])
                };
                let vjp = logsumexp_axes_vjp(&g, &x, &y, &[1], keepdims);
                assert_close(&vjp, &[1.0, 1.0, 1.0, 2.0, 2.0, 2.0], tol);
                let ones = Tensor::full(&[2, 3], T::one());
                let jvp = logsumexp_axes_jvp(&x, &y, &[1], keepdims, &ones);
                assert_close(&jvp, &[1.0, 1.0], tol);
            }
            // Columns of a transposed view: the plane-by-plane kernels.
            let xt = x.t();
            let y = xt.logsumexp_axes(&[0], false);
            let vjp = logsumexp_axes_vjp(&tensor::<T>(&[3.0, 6.0], &[2]), &xt, &y, &[0], false);
            assert_close(&vjp, &[1.0, 2.0, 1.0, 2.0, 1.0, 2.0], tol);
        }
    }
}

#[test]
fn logsumexp_gradient_is_softmax_at_large_inputs_f32() {
    logsumexp_gradient_is_softmax_at_large_inputs::<f32>();
    // The probe's cases: [1e7, 1e7] gave 0.368 each, [1e8, 1e8] 1 each, 4 x 1e5 0.2509 each.
    let x = Tensor::from_vec(vec![1e7f32, 1e7], &[2]);
    assert_eq!(
        logsumexp_vjp(&Tensor::scalar(1f32), &x, &x.logsumexp()).to_vec(),
        [0.5, 0.5]
    );
    let x = Tensor::from_vec(vec![1e5f32; 4], &[4]);
    assert_eq!(
        logsumexp_vjp(&Tensor::scalar(1f32), &x, &x.logsumexp()).to_vec(),
        [0.25; 4]
    );
}

#[test]
fn logsumexp_gradient_is_softmax_at_large_inputs_f64() {
    logsumexp_gradient_is_softmax_at_large_inputs::<f64>();
    let x = Tensor::from_vec(vec![1e17f64, 1e17], &[2]);
    assert_eq!(
        logsumexp_vjp(&Tensor::scalar(1f64), &x, &x.logsumexp()).to_vec(),
        [0.5, 0.5]
    );
}

/// `logsumexp` over a row-major tensor's last axes runs along runs of consecutive elements;
/// over a permuted view it takes the general path. Both give the same values and rules to
/// rounding (the general path sums two axes in its own order), the same special values in
/// lanes with `-inf`, `inf` and NaN.
#[test]
fn logsumexp_over_last_axes_agrees_with_the_general_path() {
    // Lane 0 all -inf; lane 1 with a NaN and an inf.
    let mut lanes = uniform::<f64>(&[30], -30.0, 30.0, 41).to_vec();
    lanes[..15].fill(f64::NEG_INFINITY);
    lanes[16] = f64::NAN;
    lanes[20] = f64::INFINITY;
    let row_major = tensor::<f64>(&lanes, &[2, 3, 5]);
    // The same tensor as a permuted view: element (i, j, k) at k*6 + j*2 + i of [5, 3, 2].
    let mut permuted = vec![0.0; 30];
    for (e, &v) in lanes.iter().enumerate() {
        let (i, j, k) = (e / 15, e / 5 % 3, e % 5);
        permuted[k * 6 + j * 2 + i] = v;
    }
    let general = tensor::<f64>(&permuted, &[5, 3, 2]).permute(&[2, 1, 0]);
    let bits = |t: &Tensor<f64>| t.to_vec().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(&general),
        bits(&row_major),
        "the two layouts hold one tensor"
    );
    for keepdims in [false, true] {
        let (y, y_general) = (
            row_major.logsumexp_axes(&[1, 2], keepdims),
            general.logsumexp_axes(&[1, 2], keepdims),
        );
        assert_eq!(y.shape(), y_general.shape());
        let (y, y_general) = (y.to_vec(), y_general.to_vec());
        assert_eq!(y[0], f64::NEG_INFINITY);
        // Lane 1 holds an inf and a NaN: NaN in both paths.
        assert!(y[1].is_nan() && y_general[1].is_nan());
        assert_eq!(y[0], y_general[0]);
    }
    // A finite tensor for the rules: each lane's weights sum to one.
    let x = uniform::<f64>(&[4, 3, 5], -30.0, 30.0, 42);
    let xt = tensor::<f64>(&x.permute(&[2, 1, 0]).to_vec(), &[5, 3, 4]).permute(&[2, 1, 0]);
    let y = x.logsumexp_axes(&[-1, -2], false);
    assert_close(&y, &xt.logsumexp_axes(&[1, 2], false).to_vec(), 1e-15);
    let g = tensor::<f64>(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let w = logsumexp_axes_vjp(&g, &x, &y, &[1, 2], false);
    let w_general = logsumexp_axes_vjp(&g, &xt, &y, &[1, 2], false);
    assert_close(&w, &w_general.to_vec(), 1e-15);
    let lane_sums = w.sum_axes(&[1, 2], false);
    assert_close(&lane_sums, &[1.0, 2.0, 3.0, 4.0], 1e-14);
    let dx = uniform::<f64>(&[4, 3, 5], -1.0, 1.0, 43);
    let t_general = logsumexp_axes_jvp(&xt, &y, &[1, 2], false, &dx).to_vec();
    assert_close(
        &logsumexp_axes_jvp(&x, &y, &[1, 2], false, &dx),
        &t_general,
        1e-14,
    );
}
