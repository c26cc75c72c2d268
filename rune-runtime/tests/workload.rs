//! The workload input generator against the check values of docs/WORKLOADS.md §5.

use rune_runtime::__private::workload_tensor;

/// Element `i` of the `f64` tensor with the given seed and range.
fn element(seed: u64, i: usize, lo: f64, hi: f64) -> f64 {
    workload_tensor::<f64>(&[i + 1], seed, lo, hi).to_vec()[i]
}

#[test]
fn check_values_in_f64() {
    assert_eq!(element(11, 0, 0.0, 1.0), 0.8520916650038546);
    assert_eq!(element(11, 1, 0.0, 1.0), 0.7171938830132001);
    assert_eq!(element(21, 0, -1.0, 1.0), -0.9257186397408721);
    assert_eq!(element(44, 25599, -1.0, 1.0), -0.4234230946671975);
}

#[test]
fn f32_rounds_the_f64_value_to_nearest() {
    // The last element of W4's `xs` ([50, 16, 32], seed 44).
    let xs = workload_tensor::<f32>(&[50, 16, 32], 44, -1.0, 1.0).to_vec();
    assert_eq!(xs.len(), 25600);
    assert_eq!(xs[25599], -0.42342308_f32);
    assert_eq!(xs[25599], -0.4234230946671975_f64 as f32);
}

#[test]
fn elements_follow_row_major_order_whatever_the_shape() {
    let flat = workload_tensor::<f64>(&[12], 7, -2.0, 2.0).to_vec();
    let shaped = workload_tensor::<f64>(&[3, 4], 7, -2.0, 2.0);
    assert_eq!(shaped.shape(), &[3, 4]);
    assert_eq!(shaped.to_vec(), flat);
    assert!(flat.iter().all(|v| (-2.0..2.0).contains(v)));
}

#[test]
fn seeds_give_different_streams() {
    let a = workload_tensor::<f32>(&[8], 12, -0.05, 0.05).to_vec();
    let b = workload_tensor::<f32>(&[8], 13, -0.05, 0.05).to_vec();
    assert_ne!(a, b);
}
