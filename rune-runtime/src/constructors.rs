//! Tensors counted out of a range (`arange`, `linspace`), drawn at random (`rand_uniform`,
//! `rand_normal`), or shaped like another (`zeros_like`, `ones_like`): the constructors that need
//! an element type's arithmetic, apart from [`Tensor`]'s definition, which needs none.

use crate::element::{Element, RangeElement};
use crate::error::{checked_size, OrPanic, ShapeError};
use crate::rng::SplitMix64;
use crate::tensor::Tensor;

impl<T: RangeElement> Tensor<T> {
    /// `[0, 1, ..., n-1]`, a 1-d tensor of `n` elements (`f32`, `f64`, dual numbers or `i64`).
    ///
    /// ```
    /// use rune_runtime::Tensor;
    /// assert_eq!(Tensor::<f64>::arange(3).to_vec(), vec![0.0, 1.0, 2.0]);
    /// assert_eq!(Tensor::<i64>::arange(3).to_vec(), vec![0, 1, 2]);
    /// ```
    ///
    /// # Panics
    /// When `n` is more elements than a tensor can hold.
    #[track_caller]
    pub fn arange(n: usize) -> Self {
        Self::try_arange(n).or_panic()
    }

    /// Like [`Tensor::arange`], returning an error when `n` is more elements than a tensor can
    /// hold.
    pub fn try_arange(n: usize) -> Result<Self, ShapeError> {
        checked_size::<T>("arange", &[n], || format!("n = {n}"))?;
        Self::try_from_vec((0..n).map(T::from_index).collect(), &[n])
    }

    /// `[start, start + step, start + 2·step, ...]` up to but not including `end`: a 1-d tensor of
    /// `⌈(end - start) / step⌉` elements, as NumPy's `arange(start, end, step)`. The step may be
    /// negative, counting down; `start == end` gives an empty tensor.
    ///
    /// ```
    /// use rune_runtime::Tensor;
    /// assert_eq!(Tensor::arange_step(0.0, 1.0, 0.25).to_vec(), vec![0.0, 0.25, 0.5, 0.75]);
    /// assert_eq!(Tensor::<i64>::arange_step(5, -1, -2).to_vec(), vec![5, 3, 1]);
    /// ```
    ///
    /// # Panics
    /// When `step` is zero or points away from `end` (negative while `end > start`, or positive
    /// while `end < start`), where NumPy would give an empty or endless range; when a float
    /// argument is NaN or infinite. The message names the op and the three arguments.
    #[track_caller]
    pub fn arange_step(start: T, end: T, step: T) -> Self {
        Self::try_arange_step(start, end, step).or_panic()
    }

    /// Like [`Tensor::arange_step`], returning an error for a zero or wrong-signed step or a
    /// non-finite float argument.
    pub fn try_arange_step(start: T, end: T, step: T) -> Result<Self, ShapeError> {
        let n = T::range_len(start, end, step)
            .map_err(|message| ShapeError::new("arange_step", message))?;
        Self::try_from_vec((0..n).map(|i| T::range_at(start, step, i)).collect(), &[n])
    }
}

impl<T: Element> Tensor<T> {
    /// `n` evenly spaced values from `start` to `end`, both included (NumPy's and JAX's
    /// `linspace(start, end, n)`, PyTorch's `linspace(start, end, steps)`): `start + i·step` with
    /// `step = (end - start) / (n - 1)`, the last exactly `end`. `n = 1` gives `[start]`, `n = 0`
    /// an empty tensor.
    ///
    /// ```
    /// use rune_runtime::Tensor;
    /// assert_eq!(Tensor::linspace(0.0, 1.0, 5).to_vec(), vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    /// assert_eq!(Tensor::linspace(2.0, -2.0, 3).to_vec(), vec![2.0, 0.0, -2.0]);
    /// assert_eq!(Tensor::linspace(3.0, 9.0, 1).to_vec(), vec![3.0]);
    /// ```
    ///
    /// # Panics
    /// When `n` is more elements than a tensor can hold.
    #[track_caller]
    pub fn linspace(start: T, end: T, n: usize) -> Self {
        Self::try_linspace(start, end, n).or_panic()
    }

    /// Like [`Tensor::linspace`], returning an error when `n` is more elements than a tensor can
    /// hold.
    pub fn try_linspace(start: T, end: T, n: usize) -> Result<Self, ShapeError> {
        checked_size::<T>("linspace", &[n], || format!("n = {n}"))?;
        let step = if n > 1 {
            (end - start) / T::from_f64((n - 1) as f64)
        } else {
            T::zero()
        };
        let values = (0..n)
            .map(|i| {
                if i + 1 == n && n > 1 {
                    end
                } else {
                    start + step * T::from_f64(i as f64)
                }
            })
            .collect();
        Self::try_from_vec(values, &[n])
    }

    /// Uniform samples in `[lo, hi)` from a fixed-seed generator (SplitMix64): the same seed gives
    /// the same tensor on every machine.
    ///
    /// # Panics
    /// When `shape` holds more elements than a tensor can.
    #[track_caller]
    pub fn rand_uniform(shape: &[usize], lo: T, hi: T, seed: u64) -> Self {
        Self::try_rand_uniform(shape, lo, hi, seed).or_panic()
    }

    /// Like [`Tensor::rand_uniform`], returning an error when `shape` holds more elements than
    /// a tensor can.
    pub fn try_rand_uniform(shape: &[usize], lo: T, hi: T, seed: u64) -> Result<Self, ShapeError> {
        let n = checked_size::<T>("rand_uniform", shape, || format!("shape {shape:?}"))?;
        let mut rng = SplitMix64::new(seed);
        let data = (0..n)
            .map(|_| lo + (hi - lo) * T::from_f64(rng.next_f64()))
            .collect();
        Self::try_from_vec(data, shape)
    }

    /// Normal samples with the given mean and standard deviation (Box–Muller on SplitMix64).
    ///
    /// # Panics
    /// When `shape` holds more elements than a tensor can.
    #[track_caller]
    pub fn rand_normal(shape: &[usize], mean: T, std: T, seed: u64) -> Self {
        Self::try_rand_normal(shape, mean, std, seed).or_panic()
    }

    /// Like [`Tensor::rand_normal`], returning an error when `shape` holds more elements than a
    /// tensor can.
    pub fn try_rand_normal(
        shape: &[usize],
        mean: T,
        std: T,
        seed: u64,
    ) -> Result<Self, ShapeError> {
        let n = checked_size::<T>("rand_normal", shape, || format!("shape {shape:?}"))?;
        let mut rng = SplitMix64::new(seed);
        let data = (0..n)
            .map(|_| mean + std * T::from_f64(rng.next_normal()))
            .collect();
        Self::try_from_vec(data, shape)
    }

    /// A tensor of zeros with this tensor's shape.
    pub fn zeros_like(&self) -> Self {
        Self::zeros(self.shape())
    }

    /// A tensor of ones with this tensor's shape.
    pub fn ones_like(&self) -> Self {
        Self::ones(self.shape())
    }
}
