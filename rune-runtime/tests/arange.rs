//! `Tensor::arange` and `Tensor::arange_step` in every element type they count in: values,
//! lengths as NumPy's `arange` gives them, and the errors for steps that never reach the end.

mod support;

use support::panic_message;

use rune_runtime::{Dual, Tensor};

#[test]
fn arange_counts_from_zero_in_every_element_type() {
    let i: Tensor<i64> = Tensor::arange(4);
    assert_eq!(i.shape(), &[4]);
    assert_eq!(i.to_vec(), vec![0, 1, 2, 3]);
    assert_eq!(Tensor::<f64>::arange(3).to_vec(), vec![0.0, 1.0, 2.0]);
    assert_eq!(Tensor::<f32>::arange(3).to_vec(), vec![0.0_f32, 1.0, 2.0]);
    let d = Tensor::<Dual<f64>>::arange(2).to_vec();
    assert_eq!((d[1].re, d[1].du), (1.0, 0.0));
    let empty = Tensor::<i64>::arange(0);
    assert_eq!(empty.shape(), &[0]);
    // The element type may come from the annotation alone.
    let f: Tensor<f32> = Tensor::arange(2);
    assert_eq!(f.to_vec(), vec![0.0, 1.0]);
}

#[test]
fn arange_step_has_numpys_length_and_values() {
    // ⌈(end - start) / step⌉ elements: the end is excluded, a partial step included.
    let cases: &[(i64, i64, i64, &[i64])] = &[
        (0, 10, 3, &[0, 3, 6, 9]),
        (0, 9, 3, &[0, 3, 6]),
        (2, 3, 5, &[2]),
        (-3, 3, 2, &[-3, -1, 1]),
        (5, -1, -2, &[5, 3, 1]),
        (5, 0, -1, &[5, 4, 3, 2, 1]),
        (4, 4, 1, &[]),
        (4, 4, -7, &[]),
    ];
    for &(start, end, step, expected) in cases {
        let t = Tensor::<i64>::arange_step(start, end, step);
        assert_eq!(t.shape(), &[expected.len()], "({start}, {end}, {step})");
        assert_eq!(t.to_vec(), expected, "({start}, {end}, {step})");
    }
    // At the ends of i64, where `i·step` alone would overflow.
    assert_eq!(
        Tensor::<i64>::arange_step(i64::MIN, i64::MAX, i64::MAX).to_vec(),
        vec![i64::MIN, -1, i64::MAX - 1]
    );
    assert_eq!(
        Tensor::<i64>::arange_step(i64::MAX, i64::MIN, i64::MIN).to_vec(),
        vec![i64::MAX, -1]
    );

    let t = Tensor::<f64>::arange_step(0.0, 1.0, 0.25);
    assert_eq!(t.to_vec(), vec![0.0, 0.25, 0.5, 0.75]);
    assert_eq!(
        Tensor::<f64>::arange_step(1.0, -0.5, -0.5).to_vec(),
        vec![1.0, 0.5, 0.0]
    );
    // start + i·step, not a running sum: 0.1·3 is 0.30000000000000004, as in NumPy.
    let tenths = Tensor::<f64>::arange_step(0.0, 0.35, 0.1).to_vec();
    assert_eq!(tenths, vec![0.0, 0.1, 0.2, 0.1 * 3.0]);
    // A partial last step counts, in f32 too.
    let t = Tensor::<f32>::arange_step(-1.0, 0.6, 0.5);
    assert_eq!(t.to_vec(), vec![-1.0_f32, -0.5, 0.0, 0.5]);
    assert_eq!(Tensor::<f32>::arange_step(0.5, 0.5, 1.0).shape(), &[0]);
    // Unsuffixed literals infer from the annotation; f64 without one.
    let u: Tensor<f32> = Tensor::arange_step(0.0, 2.0, 1.0);
    assert_eq!(u.to_vec(), vec![0.0_f32, 1.0]);
    let v = Tensor::arange_step(0.0, 2.0, 1.0);
    assert_eq!(v.to_vec(), vec![0.0_f64, 1.0]);
    // On dual numbers, the parts combine as `start + i·step`.
    let d = Tensor::arange_step(
        Dual::new(1.0, 1.0),
        Dual::constant(2.0),
        Dual::new(0.5, 2.0),
    );
    let parts: Vec<(f64, f64)> = d.to_vec().iter().map(|v| (v.re, v.du)).collect();
    assert_eq!(parts, vec![(1.0, 1.0), (1.5, 3.0)]);
}

#[test]
fn a_step_that_never_reaches_the_end_is_an_error_naming_the_arguments() {
    let err = Tensor::<i64>::try_arange_step(0, 5, 0).unwrap_err();
    assert_eq!(err.op(), "arange_step");
    let msg = err.to_string();
    assert!(
        msg.starts_with("arange_step: step 0") && msg.contains("end 5") && msg.contains("start 0"),
        "{msg}"
    );
    let msg = panic_message(|| Tensor::<i64>::arange_step(0, 5, -1));
    assert!(
        msg.starts_with("arange_step: step -1 points away from end 5 (start 0)"),
        "{msg}"
    );
    let msg = panic_message(|| Tensor::<i64>::arange_step(3, -2, 2));
    assert!(
        msg.starts_with("arange_step: step 2 points away from end -2 (start 3)"),
        "{msg}"
    );
    let msg = panic_message(|| Tensor::<f64>::arange_step(1.0, 2.0, 0.0));
    assert!(
        msg.starts_with("arange_step: step 0") && msg.contains("end 2") && msg.contains("start 1"),
        "{msg}"
    );
    let msg = panic_message(|| Tensor::<f32>::arange_step(1.0, 2.0, -0.5));
    assert!(
        msg.starts_with("arange_step: step -0.5 points away from end 2 (start 1)"),
        "{msg}"
    );
    for (start, end, step) in [
        (f64::NAN, 1.0, 1.0),
        (0.0, f64::INFINITY, 1.0),
        (0.0, 1.0, f64::NAN),
    ] {
        let err = Tensor::<f64>::try_arange_step(start, end, step).unwrap_err();
        assert_eq!(err.op(), "arange_step");
        assert!(err.to_string().contains("must all be finite"), "{err}");
    }
    // More elements than one allocation can hold.
    let err = Tensor::<i64>::try_arange_step(i64::MIN, i64::MAX, 1).unwrap_err();
    assert!(
        err.to_string().contains("more than a tensor can hold"),
        "{err}"
    );
    let err = Tensor::<f64>::try_arange_step(0.0, 1e300, 1e-300).unwrap_err();
    assert!(
        err.to_string().contains("more than a tensor can hold"),
        "{err}"
    );
}
