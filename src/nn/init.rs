//! Seeded initialisation with PyTorch's default distributions.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal, Uniform};

use crate::{Element, Tensor};

/// The source of every layer's initial parameters: a ChaCha8 generator from a seed, so that a
/// seed gives the same model on every platform and run (`torch.manual_seed`, made explicit).
/// Layers draw from it in the order they are made.
#[derive(Clone, Debug)]
pub struct Init {
    rng: ChaCha8Rng,
}

impl Init {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Init {
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// A tensor of `shape` drawn uniformly from `[−bound, bound)`.
    ///
    /// # Panics
    /// When `bound` is not a positive, finite number.
    #[track_caller]
    pub fn uniform<T: Element>(&mut self, shape: &[usize], bound: f64) -> Tensor<T> {
        let dist = Uniform::new(-bound, bound)
            .unwrap_or_else(|e| panic!("Init::uniform: the bound {bound} gives no interval ({e})"));
        self.draw(shape, dist)
    }

    /// A tensor of `shape` drawn from the normal distribution of mean `mean` and standard
    /// deviation `std`.
    ///
    /// # Panics
    /// When `std` is negative or not finite.
    #[track_caller]
    pub fn normal<T: Element>(&mut self, shape: &[usize], mean: f64, std: f64) -> Tensor<T> {
        let dist = Normal::new(mean, std)
            .unwrap_or_else(|e| panic!("Init::normal: standard deviation {std}: {e}"));
        self.draw(shape, dist)
    }

    /// PyTorch's default for a layer with `fan_in` inputs (`kaiming_uniform_(a = √5)` for a
    /// weight, and the same bound for a bias): uniform on `±1/√fan_in`.
    #[track_caller]
    pub fn fan_in<T: Element>(&mut self, shape: &[usize], fan_in: usize) -> Tensor<T> {
        assert!(fan_in > 0, "Init::fan_in: a layer needs at least one input");
        self.uniform(shape, 1.0 / (fan_in as f64).sqrt())
    }

    fn draw<T: Element>(&mut self, shape: &[usize], dist: impl Distribution<f64>) -> Tensor<T> {
        let n = shape.iter().product();
        let values = (0..n)
            .map(|_| T::from_f64(dist.sample(&mut self.rng)))
            .collect();
        Tensor::from_vec(values, shape)
    }
}
