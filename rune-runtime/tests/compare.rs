//! Comparisons, argmax/argmin, logic on masks and integer arithmetic.

mod support;

use support::panic_message;

use rune_runtime::{Dual, Tensor};

fn f(values: &[f64], shape: &[usize]) -> Tensor<f64> {
    Tensor::from_vec(values.to_vec(), shape)
}

fn m(values: &[bool], shape: &[usize]) -> Tensor<bool> {
    Tensor::from_vec(values.to_vec(), shape)
}

fn i(values: &[i64], shape: &[usize]) -> Tensor<i64> {
    Tensor::from_vec(values.to_vec(), shape)
}

#[test]
fn comparisons_against_scalars_and_tensors() {
    let t = f(&[-1.0, 0.0, 2.0], &[3]);
    // The inherent methods win over PartialEq/PartialOrd method syntax.
    assert_eq!(t.gt(0.0).to_vec(), vec![false, false, true]);
    assert_eq!(t.ge(0.0).to_vec(), vec![false, true, true]);
    assert_eq!(t.lt(0.0).to_vec(), vec![true, false, false]);
    assert_eq!(t.le(0.0).to_vec(), vec![true, true, false]);
    assert_eq!(t.eq(0.0).to_vec(), vec![false, true, false]);
    assert_eq!(t.ne(0.0).to_vec(), vec![true, false, true]);
    let u = f(&[-1.0, 1.0, 1.0], &[3]);
    assert_eq!(t.eq(&u).to_vec(), vec![true, false, false]);
    assert_eq!(t.lt(u.clone()).to_vec(), vec![false, true, false]);
    // `==` still compares whole tensors.
    assert!(t == t.clone() && t != u);
    // On a borrowed tensor too.
    let r = &t;
    assert_eq!(r.eq(&u).shape(), &[3]);
    // f32 with an f32 literal.
    let s = Tensor::<f32>::from_vec(vec![0.5, -0.5], &[2]);
    assert_eq!(s.gt(0.0f32).to_vec(), vec![true, false]);
}

/// `eq` and `ne` on integer tensors and masks give masks, as on floats; `i64` tensors also
/// have the order comparisons.
#[test]
fn integer_and_mask_comparisons_are_elementwise() {
    let a = i(&[1, 2, 3, 4], &[4]);
    let b = i(&[1, 0, 3, 5], &[4]);
    let eq: Tensor<bool> = a.eq(&b);
    assert_eq!(eq.to_vec(), vec![true, false, true, false]);
    assert_eq!(a.ne(&b).to_vec(), vec![false, true, false, true]);
    assert_eq!(a.ne(b.clone()).to_vec(), vec![false, true, false, true]);
    assert_eq!(a.lt(&b).to_vec(), vec![false, false, false, true]);
    assert_eq!(a.gt(&b).to_vec(), vec![false, true, false, false]);
    assert_eq!(a.le(&b).to_vec(), vec![true, false, true, true]);
    assert_eq!(a.ge(&b).to_vec(), vec![true, true, true, false]);
    // An unsuffixed literal is an i64 here.
    assert_eq!(a.eq(3).to_vec(), vec![false, false, true, false]);
    assert_eq!(a.ge(2).to_vec(), vec![false, true, true, true]);
    // `==` still compares whole tensors.
    assert!(a == a.clone() && a != b);
    let r = &a;
    assert_eq!(r.eq(&b).to_vec(), eq.to_vec());

    let p = m(&[true, true, false, false], &[4]);
    let q = m(&[true, false, true, false], &[4]);
    let same: Tensor<bool> = p.eq(&q);
    assert_eq!(same.to_vec(), vec![true, false, false, true]);
    assert_eq!(p.ne(&q).to_vec(), vec![false, true, true, false]);
    assert_eq!(p.eq(true).to_vec(), vec![true, true, false, false]);
    assert_eq!(p.ne(false).to_vec(), vec![true, true, false, false]);
    assert!(p == p.clone() && p != q);
}

#[test]
fn integer_and_mask_comparisons_broadcast_and_name_shapes() {
    let col = i(&[0, 2], &[2, 1]);
    let row = i(&[0, 1, 2], &[3]);
    let eq = col.eq(&row);
    assert_eq!(eq.shape(), &[2, 3]);
    assert_eq!(eq.to_vec(), vec![true, false, false, false, false, true]);
    assert_eq!(
        col.lt(&row).to_vec(),
        vec![false, true, true, false, false, false]
    );
    assert_eq!(row.ne(Tensor::scalar(1)).to_vec(), vec![true, false, true]);
    let mcol = m(&[true, false], &[2, 1]);
    let mrow = m(&[true, false, true], &[3]);
    assert_eq!(
        mcol.ne(&mrow).to_vec(),
        vec![false, true, false, true, false, true]
    );

    let err = row.try_eq(i(&[0, 1], &[2])).unwrap_err();
    assert_eq!(err.op(), "eq");
    assert!(err.to_string().contains("[3]") && err.to_string().contains("[2]"));
    let msg = panic_message(|| mrow.ne(m(&[true; 2], &[2])));
    assert!(
        msg.starts_with("ne:") && msg.contains("[3]") && msg.contains("[2]"),
        "{msg}"
    );
    let msg = panic_message(|| col.ge(i(&[0; 6], &[3, 2])));
    assert!(
        msg.starts_with("ge:") && msg.contains("[2, 1]") && msg.contains("[3, 2]"),
        "{msg}"
    );
}

/// The accuracy of a classifier, as users write it: `eq` is the elementwise method, not
/// `PartialEq::eq`, and the mask casts to numbers.
#[test]
fn accuracy_from_argmax_eq_labels() {
    // Rows' argmax: 1, 0, 2, 2.
    let logits = f(
        &[0.1, 2.0, -1.0, 3.0, 0.5, 0.2, -2.0, 0.0, 1.0, 0.3, 0.2, 0.4],
        &[4, 3],
    );
    let labels = i(&[1, 0, 0, 2], &[4]);
    let hits: Tensor<bool> = logits.argmax(-1).eq(&labels);
    assert_eq!(hits.to_vec(), vec![true, true, false, true]);
    assert_eq!(hits.cast::<f64>().mean().item(), 0.75);
    assert_eq!(hits.cast::<f32>().mean().item(), 0.75_f32);
    let misses = logits.argmax(-1).ne(&labels);
    assert_eq!(misses.cast::<f64>().sum().item(), 1.0);
}

#[test]
fn masks_cast_to_ones_and_zeros() {
    let mask = m(&[true, false, false, true, true, false], &[2, 3]);
    let x: Tensor<f64> = mask.cast();
    assert_eq!(x.shape(), &[2, 3]);
    assert_eq!(x.to_vec(), vec![1.0, 0.0, 0.0, 1.0, 1.0, 0.0]);
    assert_eq!(
        mask.cast::<f32>().to_vec(),
        vec![1.0_f32, 0.0, 0.0, 1.0, 1.0, 0.0]
    );
    // A dual number: value 1 or 0, tangent 0.
    let d = mask.cast::<Dual<f64>>().to_vec();
    assert_eq!((d[0].re, d[0].du, d[1].re, d[1].du), (1.0, 0.0, 0.0, 0.0));
    // Zeroing elements by a comparison's mask.
    let v = f(&[-1.0, 2.0, -3.0, 4.0], &[4]);
    let kept = &v * &v.gt(0.0).cast::<f64>();
    assert_eq!(kept.to_vec(), vec![0.0, 2.0, 0.0, 4.0]);
    // A 0-d mask and an empty one.
    assert_eq!(Tensor::scalar(true).cast::<f64>().item(), 1.0);
    assert_eq!(m(&[], &[0, 2]).cast::<f32>().shape(), &[0, 2]);
}

/// The right-hand side may be a reference to a reference parameter, and on dual numbers a plain
/// float (the constant with a zero tangent), as for `+ - * /`.
#[test]
// Writing `&y` for a `y: &Tensor` is what this checks compiles.
#[allow(clippy::needless_borrows_for_generic_args)]
fn comparisons_take_double_references_and_plain_floats_on_duals() {
    fn above(x: &Tensor<f64>, y: &Tensor<f64>) -> Tensor<bool> {
        x.gt(&y)
    }
    let x = f(&[1.0, 2.0, 3.0], &[3]);
    let y = f(&[2.0, 2.0, 2.0], &[3]);
    assert_eq!(above(&x, &y).to_vec(), vec![false, false, true]);
    let (a, b) = (i(&[1, 2], &[2]), i(&[1, 3], &[2]));
    let rb = &b;
    assert_eq!(a.eq(&rb).to_vec(), vec![true, false]);

    let d = x.map(|&v| Dual::new(v, 1.0));
    assert_eq!(d.gt(2.0).to_vec(), vec![false, false, true]);
    assert_eq!(d.eq(2.0).to_vec(), vec![false, true, false]);
    let e = Tensor::<f32>::from_vec(vec![-1.0, 1.0], &[2]).map(|&v| Dual::new(v, 0.0));
    assert_eq!(e.le(0.0).to_vec(), vec![true, false]);
}

#[test]
fn comparisons_broadcast() {
    let col = f(&[0.0, 1.0], &[2, 1]);
    let row = f(&[0.0, 0.5, 1.0], &[3]);
    let lt = col.lt(&row);
    assert_eq!(lt.shape(), &[2, 3]);
    assert_eq!(lt.to_vec(), vec![false, true, true, false, false, false]);
    let zero_d = Tensor::scalar(0.5);
    assert_eq!(row.ge(&zero_d).to_vec(), vec![false, true, true]);
}

#[test]
fn comparisons_with_nan_follow_ieee() {
    let t = f(&[f64::NAN], &[1]);
    for mask in [t.lt(0.0), t.gt(0.0), t.le(0.0), t.ge(0.0), t.eq(&t)] {
        assert_eq!(mask.to_vec(), vec![false]);
    }
    assert_eq!(t.ne(&t).to_vec(), vec![true]);
}

#[test]
fn comparison_shape_errors_name_op_and_shapes() {
    let a = f(&[0.0; 6], &[2, 3]);
    let b = f(&[0.0; 4], &[4]);
    let err = a.try_le(&b).unwrap_err();
    assert_eq!(err.op(), "le");
    assert!(err.to_string().contains("[2, 3]") && err.to_string().contains("[4]"));
    let msg = panic_message(|| a.eq(&b));
    assert!(
        msg.starts_with("eq:") && msg.contains("[2, 3]") && msg.contains("[4]"),
        "{msg}"
    );
}

#[test]
fn argmax_and_argmin_along_axes() {
    // [[3, 1, 4],
    //  [1, 5, 9]]
    let t = f(&[3.0, 1.0, 4.0, 1.0, 5.0, 9.0], &[2, 3]);
    let am = t.argmax(1);
    assert_eq!(am.shape(), &[2]);
    assert_eq!(am.to_vec(), vec![2, 2]);
    assert_eq!(t.argmax(0).to_vec(), vec![0, 1, 1]);
    assert_eq!(t.argmax(-2).to_vec(), vec![0, 1, 1]);
    assert_eq!(t.argmin(-1).to_vec(), vec![1, 0]);
    assert_eq!(t.argmin(0).to_vec(), vec![1, 0, 0]);
    // Ties go to the first index; NaN counts as the extreme (as NumPy).
    let ties = f(&[2.0, 7.0, 7.0, 1.0], &[4]);
    assert_eq!(ties.argmax(0).to_vec(), vec![1]);
    assert_eq!(ties.argmax(0).shape(), &[] as &[usize]);
    let nan = f(&[2.0, f64::NAN, 7.0, f64::NAN], &[4]);
    assert_eq!(nan.argmax(0).item(), 1);
    assert_eq!(nan.argmin(0).item(), 1);
    // Three axes, middle axis.
    let c = Tensor::<f64>::from_vec((0..12).map(|v| ((v * 5) % 12) as f64).collect(), &[2, 3, 2]);
    // [[[0, 5], [10, 3], [8, 1]], [[6, 11], [4, 9], [2, 7]]]
    assert_eq!(c.argmax(1).to_vec(), vec![1, 0, 0, 0]);
}

/// The first index of the extreme (or of the first NaN) of each row, by definition.
fn first_extreme(row: &[f64], max: bool) -> i64 {
    if let Some(i) = row.iter().position(|v| v.is_nan()) {
        return i as i64;
    }
    let better = |v: f64, best: f64| if max { v > best } else { v < best };
    let mut at = 0;
    for (i, &v) in row.iter().enumerate() {
        if better(v, row[at]) {
            at = i;
        }
    }
    at as i64
}

/// Rows long enough for the vector kernel (≥ 64) and short ones, with repeated extremes, signed
/// zeros and NaNs, in `f64` and `f32`, row-major and through a transposed view: the first
/// index of the extreme, as the definition scans for it.
#[test]
fn argmin_and_argmax_over_rows_follow_the_definition() {
    for n in [1, 3, 10, 63, 64, 100, 1000] {
        // Short rows go four at a time, then one by one: 22 rows are five fours and two.
        let rows = 22;
        let mut values: Vec<f64> = (0..rows * n)
            .map(|k| ((k * 7919) % 97) as f64 - 48.0)
            .collect();
        // In each eight rows, row 1 repeats its extremes, row 2 has a NaN late,
        // row 3 a NaN first, row 4 holds only signed zeros, row 5 an extreme in its last
        // element.
        for r in (0..rows).filter(|r| r % 8 == 1 || r % 8 == 4) {
            for j in 0..n {
                values[r * n + j] = match r % 8 {
                    1 if j % 2 == 0 => 5.0,
                    1 => -5.0,
                    _ if j % 3 == 0 => -0.0,
                    _ => 0.0,
                };
            }
        }
        for group in (0..rows).step_by(8).filter(|g| g + 5 < rows) {
            values[(group + 2) * n + n.saturating_sub(2)] = f64::NAN;
            values[(group + 3) * n] = f64::NAN;
            values[(group + 5) * n + n - 1] = 1e9;
        }
        let t = f(&values, &[rows, n]);
        let by_rows: Vec<&[f64]> = values.chunks(n).collect();
        for max in [false, true] {
            let expected: Vec<i64> = by_rows.iter().map(|r| first_extreme(r, max)).collect();
            let arg = |t: &Tensor<f64>, axis| if max { t.argmax(axis) } else { t.argmin(axis) };
            assert_eq!(arg(&t, 1).to_vec(), expected, "f64, n = {n}, max = {max}");
            assert_eq!(arg(&t, -1).shape(), &[rows]);
            // The same rows as a transposed view (not row-major): the lane-by-lane path.
            let transposed: Vec<f64> = (0..rows * n)
                .map(|k| values[(k % rows) * n + k / rows])
                .collect();
            let view = f(&transposed, &[n, rows]).t();
            assert_eq!(arg(&view, 1).to_vec(), expected, "view, n = {n}");
            let single = t.cast::<f32>();
            let got = if max {
                single.argmax(1)
            } else {
                single.argmin(1)
            };
            assert_eq!(got.to_vec(), expected, "f32, n = {n}, max = {max}");
        }
    }
}

#[test]
fn argmax_errors_name_op_and_shape() {
    let t = f(&[1.0, 2.0], &[2]);
    let err = t.try_argmax(1).unwrap_err();
    assert_eq!(err.op(), "argmax");
    assert!(err.to_string().contains("axis 1"), "{err}");
    let msg = panic_message(|| t.argmin(-2));
    assert!(msg.starts_with("argmin:") && msg.contains("-2"), "{msg}");
    let empty = Tensor::<f64>::zeros(&[2, 0]);
    let msg = panic_message(|| empty.argmax(1));
    assert!(
        msg.starts_with("argmax:") && msg.contains("[2, 0]"),
        "{msg}"
    );
    // Reducing a non-empty axis of a tensor that is empty elsewhere is fine.
    assert_eq!(empty.argmax(0).shape(), &[0]);
}

#[test]
fn logic_on_masks() {
    let a = m(&[true, true, false, false], &[4]);
    let b = m(&[true, false, true, false], &[4]);
    assert_eq!(a.and(&b).to_vec(), vec![true, false, false, false]);
    assert_eq!(a.or(&b).to_vec(), vec![true, true, true, false]);
    assert_eq!(a.xor(&b).to_vec(), vec![false, true, true, false]);
    assert_eq!(a.not().to_vec(), vec![false, false, true, true]);
    assert_eq!((!&a).to_vec(), vec![false, false, true, true]);
    assert_eq!((!a.clone()).to_vec(), vec![false, false, true, true]);
    assert_eq!((&a & &b).to_vec(), a.and(&b).to_vec());
    assert_eq!((a.clone() | b.clone()).to_vec(), a.or(&b).to_vec());
    assert_eq!((&a ^ b.clone()).to_vec(), a.xor(&b).to_vec());
    // Masks from comparisons combine and broadcast.
    let x = f(&[-2.0, -0.5, 0.5, 2.0], &[4]);
    let inside = x.gt(-1.0).and(&x.lt(1.0));
    assert_eq!(inside.to_vec(), vec![false, true, true, false]);
    let col = m(&[true, false], &[2, 1]);
    let both = col.and(&a);
    assert_eq!(both.shape(), &[2, 4]);
    assert_eq!(
        both.to_vec(),
        vec![true, true, false, false, false, false, false, false]
    );
    let err = a.try_or(&m(&[true; 3], &[3])).unwrap_err();
    assert_eq!(err.op(), "or");
    assert!(err.to_string().contains("[4]") && err.to_string().contains("[3]"));
}

#[test]
fn integer_arithmetic_follows_rust() {
    let a = i(&[7, -7, 7, -7], &[4]);
    let b = i(&[2, 2, -2, -2], &[4]);
    // Truncating division; the remainder takes the dividend's sign.
    assert_eq!((&a / &b).to_vec(), vec![3, -3, -3, 3]);
    assert_eq!((&a % &b).to_vec(), vec![1, -1, 1, -1]);
    assert_eq!((&a + &b).to_vec(), vec![9, -5, 5, -9]);
    assert_eq!((&a - &b).to_vec(), vec![5, -9, 9, -5]);
    assert_eq!((&a * &b).to_vec(), vec![14, -14, -14, 14]);
    // Every owned/borrowed/scalar combination.
    assert_eq!((a.clone() + b.clone()).to_vec(), vec![9, -5, 5, -9]);
    assert_eq!((a.clone() - &b).to_vec(), vec![5, -9, 9, -5]);
    assert_eq!((&a * b.clone()).to_vec(), vec![14, -14, -14, 14]);
    assert_eq!((a.clone() / 2).to_vec(), vec![3, -3, 3, -3]);
    assert_eq!((&a % 3).to_vec(), vec![1, -1, 1, -1]);
    assert_eq!((10 - &a).to_vec(), vec![3, 17, 3, 17]);
    assert_eq!((100 / a.clone()).to_vec(), vec![14, -14, 14, -14]);
    assert_eq!((-9 % &b).to_vec(), vec![-1, -1, -1, -1]);
    assert_eq!((2 * &b).to_vec(), vec![4, 4, -4, -4]);
    assert_eq!((1 + b.clone()).to_vec(), vec![3, 3, -1, -1]);
}

#[test]
fn integer_arithmetic_broadcasts() {
    let col = i(&[0, 10], &[2, 1]);
    let row = i(&[1, 2, 3], &[3]);
    let s = &col + &row;
    assert_eq!(s.shape(), &[2, 3]);
    assert_eq!(s.to_vec(), vec![1, 2, 3, 11, 12, 13]);
    let bad = i(&[1, 2, 3], &[3, 1]);
    let msg = panic_message(|| &col + &bad);
    assert!(
        msg.starts_with("add:") && msg.contains("[2, 1]") && msg.contains("[3, 1]"),
        "{msg}"
    );
}

#[test]
fn integer_division_by_zero_names_op_and_shapes() {
    let a = i(&[1, 2, 3], &[3]);
    let b = i(&[1, 0, 1], &[3]);
    let msg = panic_message(|| &a / &b);
    assert!(
        msg.starts_with("div:") && msg.contains("division by zero") && msg.contains("[3]"),
        "{msg}"
    );
    let msg = panic_message(|| &a % 0);
    assert!(
        msg.starts_with("rem:") && msg.contains("division by zero") && msg.contains("scalar 0"),
        "{msg}"
    );
    let msg = panic_message(|| i(&[i64::MIN], &[1]) / -1);
    assert!(
        msg.starts_with("div:") && msg.contains("overflows"),
        "{msg}"
    );
}

#[test]
fn unsuffixed_literals_infer_from_the_tensor() {
    let x = rune_runtime::Tensor::<f32>::from_vec(vec![-1.0, 2.0], &[2]);
    assert_eq!(x.gt(0.0).to_vec(), vec![false, true]);
    assert_eq!(x.le(&x).to_vec(), vec![true, true]);
}
