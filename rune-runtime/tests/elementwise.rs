//! Elementwise ops and rules on operands of the same shape, in every layout a tensor can have
//! (row-major, transposed, reversed, a block of a larger tensor, views joined along their last axis,
//! 0-d, empty), against the same function applied to their elements one by one in row-major
//! order; and their results, row-major whatever the operands' layouts.

use rune_runtime::__private::rules;
use rune_runtime::ndarray::{s, Ix2};
use rune_runtime::{concat, where_cond, Tensor};

fn numbered(shape: &[usize], phase: f64) -> Tensor<f64> {
    let n = shape.iter().product();
    Tensor::from_vec(
        (0..n).map(|i| (i as f64 * 0.37 + phase).sin()).collect(),
        shape,
    )
}

/// A `[3, 4]` tensor in each layout, with the same elements in row-major order.
fn layouts(phase: f64) -> Vec<(&'static str, Tensor<f64>)> {
    in_layouts(&numbered(&[3, 4], phase))
}

/// The row-major `[3, 4]` tensor `m` and its elements in each other layout.
fn in_layouts<T: Clone + PartialEq + std::fmt::Debug>(
    m: &Tensor<T>,
) -> Vec<(&'static str, Tensor<T>)> {
    let transposed = Tensor::from_vec(m.t().to_vec(), &[4, 3]).t();
    let reversed = Tensor::from_vec(m.flip(&[0, 1]).to_vec(), &[3, 4]).flip(&[0, 1]);
    let mut wide = vec![m.to_vec()[0].clone(); 3 * 6];
    for (i, v) in m.to_vec().into_iter().enumerate() {
        wide[(i / 4) * 6 + 1 + i % 4] = v;
    }
    // Sliced through ndarray: `shrink` copies a part this small out row-major.
    let mut wide = Tensor::from_vec(wide, &[3, 6])
        .to_shared()
        .into_dimensionality::<Ix2>()
        .unwrap();
    wide.slice_collapse(s![.., 1..5]);
    let block = Tensor::from(wide);
    // `concat` of transposed views along an inner axis lays its result out with that axis
    // outermost in memory (of row-major inputs, row-major).
    let columns = |from: usize| {
        let part = m.shrink(&[(0, 3), (from, from + 2)]);
        Tensor::from_vec(part.t().to_vec(), &[2, 3]).t()
    };
    let joined = concat(&[columns(0), columns(2)], 1);
    for t in [&transposed, &reversed, &block, &joined] {
        assert_eq!(t.to_vec(), m.to_vec());
        assert!(!t.is_standard_layout());
    }
    vec![
        ("row-major", m.clone()),
        ("transposed", transposed),
        ("reversed", reversed),
        ("block", block),
        ("joined", joined),
    ]
}

#[track_caller]
fn assert_elementwise(
    what: &str,
    got: &Tensor<f64>,
    a: &Tensor<f64>,
    b: &Tensor<f64>,
    f: impl Fn(f64, f64) -> f64,
) {
    assert_eq!(got.shape(), a.shape(), "{what}");
    let want: Vec<f64> = a
        .to_vec()
        .into_iter()
        .zip(b.to_vec())
        .map(|(x, y)| f(x, y))
        .collect();
    assert_eq!(got.to_vec(), want, "{what}");
}

#[test]
fn binary_ops_and_rules_in_every_layout() {
    for (la, a) in layouts(0.0) {
        for (lb, b) in layouts(1.0) {
            let what = format!("{la} with {lb}");
            assert_elementwise(&what, &(&a + &b), &a, &b, |x, y| x + y);
            assert_elementwise(&what, &(&a - &b), &a, &b, |x, y| x - y);
            assert_elementwise(&what, &(&a * &b), &a, &b, |x, y| x * y);
            assert_elementwise(&what, &(&a / &b), &a, &b, |x, y| x / y);
            assert_elementwise(
                &what,
                &rules::mul_vjp_lhs(&a, &[3, 4], &b),
                &a,
                &b,
                |g, y| g * y,
            );
            assert_elementwise(&what, &rules::square_vjp(&a, &b), &a, &b, |g, x| {
                g * (x + x)
            });
            assert_elementwise(&what, &rules::sin_vjp(&a, &b), &a, &b, |g, x| g * x.cos());
            for (op, f) in [
                ("+=", (|x, y| x + y) as fn(f64, f64) -> f64),
                ("-=", |x, y| x - y),
                ("*=", |x, y| x * y),
                ("/=", |x, y| x / y),
            ] {
                let mut c = a.clone();
                match op {
                    "+=" => c += &b,
                    "-=" => c -= &b,
                    "*=" => c *= &b,
                    _ => c /= &b,
                }
                assert_elementwise(&format!("{what}, {op}"), &c, &a, &b, f);
            }
        }
    }
}

#[test]
fn in_place_ops_leave_shared_storage_alone() {
    let a = numbered(&[3, 4], 0.0);
    let before = a.to_vec();
    let mut c = a.clone();
    c += &numbered(&[3, 4], 1.0);
    assert_eq!(a.to_vec(), before);
    assert_ne!(c.to_vec(), before);
}

#[test]
fn zero_dimensional_and_empty_operands() {
    let (x, y) = (Tensor::scalar(1.5), Tensor::scalar(-2.0));
    assert_eq!((&x * &y).shape(), &[] as &[usize]);
    assert_eq!((&x * &y).item(), -3.0);
    let mut z = x.clone();
    z += &y;
    assert_eq!(z.item(), -0.5);
    let e = Tensor::<f64>::zeros(&[0, 3]);
    assert_eq!((&e + &e).shape(), &[0, 3]);
    assert_eq!(rules::exp_vjp(&e, &e).shape(), &[0, 3]);
}

#[test]
fn strong_zeros_hold_on_the_fast_path() {
    // A zero cotangent against an infinite local derivative (ln at 0, 0 * inf) stays zero.
    let g = Tensor::from_vec(vec![0.0, 1.0, 0.0, 2.0], &[4]);
    let x = Tensor::from_vec(vec![0.0, 2.0, 0.0, 4.0], &[4]);
    assert_eq!(rules::ln_vjp(&g, &x).to_vec(), vec![0.0, 0.5, 0.0, 0.5]);
    let inf = Tensor::from_vec(vec![f64::INFINITY, 1.0, f64::NAN, 3.0], &[4]);
    assert_eq!(
        rules::mul_vjp_lhs(&g, &[4], &inf).to_vec(),
        vec![0.0, 1.0, 0.0, 6.0]
    );
}

/// `accumulate` on an adjoint whose storage another tensor shares (a cotangent `add_vjp`
/// passed on): the sum is right whichever buffer it lands in, and the sharer keeps its values.
#[test]
fn accumulate_into_a_shared_adjoint() {
    use rune_runtime::__private::accumulate;
    for (la, a) in layouts(0.0) {
        for (lc, c) in layouts(1.0) {
            let what = format!("{la} adjoint, {lc} contribution");
            let a_values = a.to_vec();
            // Shared adjoint, contribution of its own (a fresh tensor).
            let fresh = &c * 1.0;
            let mut adjoint = Some(a.clone());
            accumulate(&mut adjoint, fresh);
            assert_elementwise(&what, &adjoint.unwrap(), &a, &c, |x, y| x + y);
            // Shared adjoint, shared contribution.
            let mut adjoint = Some(a.clone());
            accumulate(&mut adjoint, c.clone());
            assert_elementwise(&what, &adjoint.unwrap(), &a, &c, |x, y| x + y);
            assert_eq!(
                a.to_vec(),
                a_values,
                "{what}: the shared adjoint was written"
            );
        }
    }
    // A contribution that broadcasts into the adjoint.
    let a = numbered(&[3, 4], 0.0);
    let row = numbered(&[4], 1.0);
    let mut adjoint = Some(a.clone());
    accumulate(&mut adjoint, &row * 1.0);
    assert_eq!(adjoint.unwrap().to_vec(), (&a + &row).to_vec());
}

/// Operands that broadcast along leading axes (a bias against a batch), on either side, against
/// the same op on both operands first broadcast to the result's shape.
#[test]
fn binary_ops_broadcasting_a_row() {
    let pairs: &[(&[usize], &[usize])] = &[
        (&[3, 4], &[4]),
        (&[3, 4], &[1, 4]),
        (&[2, 3, 4], &[3, 4]),
        (&[2, 3, 4], &[1, 1, 4]),
        (&[2, 3, 4], &[4]),
        (&[0, 4], &[4]),
        (&[3, 0], &[0]),
        (&[3, 4], &[3, 1]),
        (&[3, 1], &[1, 4]),
        (&[4], &[]),
        // Rows shorter than a vector loop, repeated into runs: counts of rows that fill the
        // runs exactly, leave whole rows over, or fall short of one run.
        (&[13, 10], &[10]),
        (&[7, 10], &[10]),
        (&[3, 10], &[1, 10]),
        (&[40, 1], &[1]),
        (&[5, 63], &[63]),
        (&[3, 64], &[64]),
        (&[3, 65], &[65]),
        (&[4, 6, 3], &[3]),
        // A column of one value a row (a row's maximum kept as an axis), a batch of them, and
        // rows of none.
        (&[13, 10], &[13, 1]),
        (&[2, 3, 4], &[2, 3, 1]),
        (&[4, 0], &[4, 1]),
    ];
    for &(sa, sb) in pairs {
        for (a, b) in [
            (numbered(sa, 0.0), numbered(sb, 1.0)),
            (numbered(sb, 1.0), numbered(sa, 0.0)),
        ] {
            let shape = rune_runtime::broadcast_shapes("test", a.shape(), b.shape()).unwrap();
            let (fa, fb) = (a.broadcast_to(&shape), b.broadcast_to(&shape));
            let what = format!("{:?} with {:?}", a.shape(), b.shape());
            assert_elementwise(&what, &(&a + &b), &fa, &fb, |x, y| x + y);
            assert_elementwise(&what, &(&a - &b), &fa, &fb, |x, y| x - y);
            assert_elementwise(&what, &(&a * &b), &fa, &fb, |x, y| x * y);
            assert_elementwise(&what, &(&a / &b), &fa, &fb, |x, y| x / y);
        }
    }
    // A transposed batch takes the general path, with the same result.
    let batch = Tensor::from_vec(numbered(&[4, 3], 0.0).to_vec(), &[4, 3]).t();
    let row = numbered(&[4], 1.0);
    let expected = Tensor::from_vec(batch.to_vec(), &[3, 4]);
    assert_eq!((&batch - &row).to_vec(), (&expected - &row).to_vec());
}

/// Every elementwise op writes its result row-major, whatever its operands' layouts: a fused
/// region of `#[differentiable]` code writes (or sums) its values in row-major order, and the
/// same ops one by one must make the same tensor, down to the order in which a `sum` of it adds
/// (a contiguous tensor is summed in its memory order).
#[test]
fn elementwise_results_are_row_major_in_every_layout() {
    #[track_caller]
    fn row_major(what: &str, t: &Tensor<f64>, want: &Tensor<f64>) {
        assert!(t.is_standard_layout(), "{what}");
        assert_eq!(t.shape(), want.shape(), "{what}");
        let bits = |t: &Tensor<f64>| t.to_vec().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(t), bits(want), "{what}");
    }
    let row = numbered(&[4], 2.0);
    // Masks in the layouts of the operands.
    let masks = in_layouts(&numbered(&[3, 4], 0.0).gt(0.0));
    for ((la, a), (_, mask)) in layouts(0.0).into_iter().zip(masks) {
        // The same elements in a row-major tensor, which the ops' fast paths take.
        let s = Tensor::from_vec(a.to_vec(), a.shape());
        row_major(la, &a.sin(), &s.sin());
        row_major(la, &a.tanh(), &s.tanh());
        row_major(la, &a.clamp(-0.5, 0.5), &s.clamp(-0.5, 0.5));
        row_major(la, &a.powi(3), &s.powi(3));
        row_major(la, &-&a, &-&s);
        row_major(la, &(&a * 2.0), &(&s * 2.0));
        row_major(la, &(2.0 - &a), &(2.0 - &s));
        row_major(la, &a.map(|&v| v * v), &s.map(|&v| v * v));
        row_major(la, &rules::cos_jvp(&a, &a), &rules::cos_jvp(&s, &s));
        row_major(
            la,
            &where_cond(&mask, &a, &0.0),
            &where_cond(&mask, &s, &0.0),
        );
        let mut c = a.clone();
        c += 1.0;
        row_major(&format!("{la} += 1"), &c, &(&s + 1.0));
        // Against a row broadcast along the rows, and a reversed one (a view of negative
        // stride, broadcast with a stride of zero).
        for (lr, r) in [("row", row.clone()), ("reversed row", row.flip(&[0]))] {
            let rs = Tensor::from_vec(r.to_vec(), &[4]);
            let what = format!("{la} with a {lr}");
            row_major(&what, &(&a * &r), &(&s * &rs));
            row_major(&what, &(&r - &a), &(&rs - &s));
            row_major(&what, &a.maximum(&r), &s.maximum(&rs));
            row_major(&what, &a.atan2(&r), &s.atan2(&rs));
            row_major(
                &what,
                &where_cond(&mask, &a, &r),
                &where_cond(&mask, &s, &rs),
            );
            let mut c = a.clone();
            c *= &r;
            row_major(&format!("{what}, *="), &c, &(&s * &rs));
        }
        for (lb, b) in layouts(1.0) {
            let bs = Tensor::from_vec(b.to_vec(), b.shape());
            let what = format!("{la} with {lb}");
            row_major(&what, &(&a + &b), &(&s + &bs));
            row_major(&what, &a.pow(&b.abs()), &s.pow(&bs.abs()));
            row_major(&what, &rules::sin_vjp(&a, &b), &rules::sin_vjp(&s, &bs));
            let mut c = a.clone();
            c -= &b;
            row_major(&format!("{what}, -="), &c, &(&s - &bs));
        }
    }
    // A batch laid out column-major against a transposed matrix broadcast along it, which
    // `Zip` alone writes column-major.
    let batch = numbered(&[2, 3, 4], 0.0).permute(&[2, 1, 0]);
    let matrix = numbered(&[2, 3], 1.0).t();
    let (bs, ms) = (
        Tensor::from_vec(batch.to_vec(), batch.shape()),
        Tensor::from_vec(matrix.to_vec(), matrix.shape()),
    );
    row_major("batch by matrix", &(&batch * &matrix), &(&bs * &ms));
    row_major("matrix by batch", &(&matrix - &batch), &(&ms - &bs));
}
