//! Batches of examples for a training loop: a [`DataLoader`] over a tensor, a `Vec` of
//! examples, or a tuple of them, whose first axis (or position) runs over the examples, in
//! order or shuffled anew each epoch from a seed, with or without the last, short batch
//! (`torch.utils.data.DataLoader` with a seeded generator).
//!
//! ```
//! use rune_runtime::data::DataLoader;
//! use rune_runtime::Tensor;
//!
//! let x = Tensor::from_vec((0..10).map(f64::from).collect(), &[5, 2]);
//! let y = Tensor::from_vec(vec![0_i64, 1, 0, 1, 1], &[5]);
//! let loader = DataLoader::new((x, y), 2).shuffle(7).drop_last();
//! assert_eq!(loader.len(), 2);
//! for epoch in 0..3 {
//!     for (xb, yb) in loader.epoch(epoch) {
//!         assert_eq!((xb.shape(), yb.shape()), (&[2, 2][..], &[2][..]));
//!     }
//! }
//! ```

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::tensor::Tensor;

/// What a [`DataLoader`] batches: a collection of examples, each taken by its position.
pub trait Examples {
    /// A batch of examples: the same kind of collection.
    type Batch;
    /// The number of examples.
    fn examples(&self) -> usize;
    /// The examples at `positions`, in that order.
    fn select(&self, positions: &[usize]) -> Self::Batch;
    /// The number of examples of each part (a tuple's), which must agree.
    fn parts(&self) -> Vec<usize> {
        vec![self.examples()]
    }
}

/// A tensor's examples run along its first axis.
impl<T: Clone> Examples for Tensor<T> {
    type Batch = Tensor<T>;
    #[track_caller]
    fn examples(&self) -> usize {
        match self.shape().first() {
            Some(&n) => n,
            None => panic!("DataLoader: a 0-d tensor has no axis of examples"),
        }
    }
    fn select(&self, positions: &[usize]) -> Tensor<T> {
        self.index_select(0, positions)
    }
}

/// A `Vec`'s examples are its elements (file names, token lists, ..).
impl<X: Clone> Examples for Vec<X> {
    type Batch = Vec<X>;
    fn examples(&self) -> usize {
        self.len()
    }
    fn select(&self, positions: &[usize]) -> Vec<X> {
        positions.iter().map(|&i| self[i].clone()).collect()
    }
}

impl<X: Examples + ?Sized> Examples for &X {
    type Batch = X::Batch;
    fn examples(&self) -> usize {
        (**self).examples()
    }
    fn select(&self, positions: &[usize]) -> X::Batch {
        (**self).select(positions)
    }
    fn parts(&self) -> Vec<usize> {
        (**self).parts()
    }
}

macro_rules! tuple_examples {
    ($($name:ident $index:tt),+) => {
        /// Inputs and targets together: the same positions of each.
        impl<$($name: Examples),+> Examples for ($($name,)+) {
            type Batch = ($($name::Batch,)+);
            fn examples(&self) -> usize {
                // `DataLoader::new` checks that the parts agree.
                tuple_examples!(@first $(self.$index),+)
            }
            fn select(&self, positions: &[usize]) -> Self::Batch {
                ($(self.$index.select(positions),)+)
            }
            fn parts(&self) -> Vec<usize> {
                let mut all = Vec::new();
                $(all.extend(self.$index.parts());)+
                all
            }
        }
    };
    (@first $first:expr $(, $rest:expr)*) => { $first.examples() };
}
tuple_examples!(A 0, B 1);
tuple_examples!(A 0, B 1, C 2);

/// Batches of `batch_size` examples of `data`, in order or shuffled per epoch (see the module
/// documentation).
#[derive(Clone, Debug)]
pub struct DataLoader<D> {
    data: D,
    batch_size: usize,
    seed: Option<u64>,
    drop_last: bool,
}

impl<D: Examples> DataLoader<D> {
    /// Batches of `batch_size` examples of `data`, in order, the last one shorter when
    /// `batch_size` does not divide the number of examples.
    ///
    /// # Panics
    /// When `batch_size` is zero, or the parts of a tuple hold different numbers of examples.
    #[track_caller]
    pub fn new(data: D, batch_size: usize) -> Self {
        assert!(batch_size > 0, "DataLoader::new: `batch_size` is 0");
        let parts = data.parts();
        assert!(
            parts.windows(2).all(|w| w[0] == w[1]),
            "DataLoader::new: the parts hold {parts:?} examples; each must hold as many"
        );
        DataLoader {
            data,
            batch_size,
            seed: None,
            drop_last: false,
        }
    }

    /// The same loader, shuffling the examples at each epoch: epoch `k`'s order is a
    /// permutation drawn from `seed` and `k` (ChaCha8, stream `k`), the same on every run.
    #[must_use]
    pub fn shuffle(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The same loader without the last batch when it is shorter than `batch_size`.
    #[must_use]
    pub fn drop_last(mut self) -> Self {
        self.drop_last = true;
        self
    }

    /// The number of batches in an epoch.
    pub fn len(&self) -> usize {
        let n = self.data.examples();
        if self.drop_last {
            n / self.batch_size
        } else {
            n.div_ceil(self.batch_size)
        }
    }

    /// Whether an epoch has no batch.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The data batched.
    pub fn data(&self) -> &D {
        &self.data
    }

    /// The batches of epoch `epoch`.
    pub fn epoch(&self, epoch: u64) -> Batches<'_, D> {
        let mut order: Vec<usize> = (0..self.data.examples()).collect();
        if let Some(seed) = self.seed {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(epoch);
            order.shuffle(&mut rng);
        }
        Batches {
            loader: self,
            order,
            next: 0,
            left: self.len(),
        }
    }
}

/// The batches of one epoch of a [`DataLoader`].
#[derive(Debug)]
pub struct Batches<'a, D> {
    loader: &'a DataLoader<D>,
    order: Vec<usize>,
    next: usize,
    left: usize,
}

impl<D: Examples> Iterator for Batches<'_, D> {
    type Item = D::Batch;

    fn next(&mut self) -> Option<D::Batch> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let end = (self.next + self.loader.batch_size).min(self.order.len());
        let batch = self.loader.data.select(&self.order[self.next..end]);
        self.next = end;
        Some(batch)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<D: Examples> ExactSizeIterator for Batches<'_, D> {}
