//! The inputs of the factorization benches (`factorizations`, `fact_ratios`): deterministic
//! matrices, each as a rune-ad tensor and a faer matrix, in `f64` and `f32`.

use faer::traits::RealField;
use faer::Mat;
use rune_ad::Tensor;

/// A deterministic `rows × cols` matrix of values in `[-1, 1)` (a 64-bit LCG).
pub fn random(rows: usize, cols: usize, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..rows * cols)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// `A Aᵀ / n + I`: symmetric positive definite and well conditioned.
pub fn spd(a: &[f64], n: usize) -> Vec<f64> {
    let m = Mat::from_fn(n, n, |i, j| a[i * n + j]);
    let s = &m * m.transpose();
    (0..n * n)
        .map(|idx| {
            let (i, j) = (idx / n, idx % n);
            s[(i, j)] / n as f64 + if i == j { 1.0 } else { 0.0 }
        })
        .collect()
}

/// The element types measured.
pub trait Scalar: rune_ad::Element + RealField + Copy {
    const NAME: &'static str;
    fn of(x: f64) -> Self;
}

impl Scalar for f64 {
    const NAME: &'static str = "f64";
    fn of(x: f64) -> Self {
        x
    }
}

impl Scalar for f32 {
    const NAME: &'static str = "f32";
    fn of(x: f64) -> Self {
        x as f32
    }
}

/// One input, as a rune-ad tensor and a faer matrix.
pub struct Input<T: Scalar> {
    pub tensor: Tensor<T>,
    pub mat: Mat<T>,
}

/// `data` (row-major, `rows × cols`) converted to `T`.
pub fn input<T: Scalar>(data: &[f64], rows: usize, cols: usize) -> Input<T> {
    let data: Vec<T> = data.iter().map(|&x| T::of(x)).collect();
    let tensor = Tensor::from_vec(data.clone(), &[rows, cols]);
    let mat = Mat::from_fn(rows, cols, |i, j| data[i * cols + j]);
    Input { tensor, mat }
}
