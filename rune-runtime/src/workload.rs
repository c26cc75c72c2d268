//! The input generator of the benchmark workloads (docs/WORKLOADS.md §1), reproducible bit for bit
//! in any language: element `i` is a pure function of the seed and `i`.
//!
//! Other AD systems measured on the same workloads build their inputs with the same formula
//! (vectorised in NumPy), so every system differentiates exactly the same numbers.

use crate::element::Element;
use crate::tensor::Tensor;

/// The splitmix64 finalizer applied to the counter `(seed << 32) + i`, as a uniform `f64` in
/// `[0, 1)` with 53 random bits.
#[inline]
fn unit(seed: u64, i: u64) -> f64 {
    let mut z = (seed << 32)
        .wrapping_add(i)
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    // 2^-53 is exact, so is the product: every value of `u` is a multiple of 2^-53.
    (z >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A workload input: element `i` (row-major) is `lo + (hi - lo) * u_i` computed in `f64`, with
/// `u_i` in `[0, 1)` from the splitmix64 finalizer on the counter `(seed << 32) + i`, then
/// rounded to `T` (to nearest for `f32`; `f64` keeps the value).
///
/// This is the generator of the benchmark workloads, defined so that other systems (NumPy,
/// PyTorch, JAX) reproduce the same tensors exactly:
///
/// ```text
/// z = (seed << 32) + i + 0x9E3779B97F4A7C15        (wrapping u64 arithmetic)
/// z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
/// z = (z ^ (z >> 27)) * 0x94D049BB133111EB
/// z =  z ^ (z >> 31)
/// u = (z >> 11) as f64 * 2^-53
/// ```
///
/// Unlike [`Tensor::rand_uniform`], which runs a sequential generator, any element can be
/// computed on its own.
///
/// ```
/// use rune_runtime::__private::workload_tensor;
///
/// let x = workload_tensor::<f64>(&[64, 784], 11, 0.0, 1.0);
/// assert_eq!(x.shape(), &[64, 784]);
/// assert_eq!(x.to_vec()[0], 0.8520916650038546);
/// ```
#[must_use]
pub fn workload_tensor<T: Element>(shape: &[usize], seed: u64, lo: f64, hi: f64) -> Tensor<T> {
    let n: usize = shape.iter().product();
    let data = (0..n as u64)
        .map(|i| T::from_f64(lo + (hi - lo) * unit(seed, i)))
        .collect();
    Tensor::from_vec(data, shape)
}
