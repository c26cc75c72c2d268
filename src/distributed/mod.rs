//! Data-parallel training over MPI (feature `mpi`): the processes of an MPI job (`mpirun -np 2
//! ..`), on one machine or many, each compute the gradient of their share of a batch, and the
//! gradients are combined by MPI's collectives, as Horovod and PyTorch's
//! `DistributedDataParallel` do. The communication is the system's MPI library through
//! [`mpi`] (rsmpi), re-exported here so that a program needs no dependency of its own.
//!
//! - [`all_reduce_sum`] and [`all_reduce_mean`] combine a [`Differentiable`] value (a gradient
//!   structure) across the ranks: its leaves are packed into one contiguous buffer (a structure
//!   has one element type, so one buffer), reduced by one `MPI_Allreduce`, and unpacked, not one
//!   collective per tensor.
//! - [`broadcast`] copies rank 0's parameters to every rank; [`check_same_parameters`] checks
//!   that every rank holds the same ones (a hash of each leaf, [`parameter_hash`] of the whole).
//! - [`shard_range`] and [`shard`] split a data set or a batch by rank, the same way on every
//!   run: rank `r` of `p` takes a contiguous block, the first `n % p` ranks one example more.
//! - [`DataParallel`] puts them together: [`step`](DataParallel::step) computes the value and
//!   gradient on the rank's shard of a batch, combines the gradients into the whole batch's, and
//!   runs the optimizer's step, the same on every rank.
//!
//! Every rank must call these functions in the same order with structures of the same leaves
//! (count, shapes and element type): a mismatch panics on every rank naming the first leaf that
//! differs and its shape on each side, found by comparing a hash of the leaves' shapes in one
//! collective of two integers before the data moves. A panic on one rank alone would leave the
//! others waiting in their next collective: [`abort_on_panic`] makes it end the job instead.
//!
//! ```no_run
//! use rune_ad::distributed::{mpi, DataParallel};
//! use rune_ad::optim::Sgd;
//! use rune_ad::prelude::*;
//!
//! #[differentiable]
//! fn loss(w: &Tensor<f64>, #[nodiff] x: &Tensor<f64>, #[nodiff] y: &Tensor<f64>) -> Tensor<f64> {
//!     let d = x.matmul(w) - y;
//!     (&d * &d).mean()
//! }
//!
//! let universe = mpi::initialize().expect("MPI is initialised once");
//! rune_ad::distributed::abort_on_panic();
//! let world = universe.world();
//! let mut w = Tensor::<f64>::rand_normal(&[3, 1], 0.0, 1.0, 7);
//! // Every rank starts from rank 0's parameters.
//! let dp = DataParallel::new(&world, &mut w);
//! let x = Tensor::<f64>::rand_normal(&[8, 3], 0.0, 1.0, 1);
//! let y = Tensor::<f64>::rand_normal(&[8, 1], 0.0, 1.0, 2);
//! let mut sgd = Sgd::new(0.1);
//! for _ in 0..10 {
//!     // This rank's half (with two ranks) of the batch of 8: the step is the whole batch's.
//!     let value = dp.step(
//!         &mut w,
//!         &(&x, &y),
//!         |w, (x, y)| loss_value_and_grad(w, &x, &y),
//!         |w, g| sgd.step(w, g),
//!     );
//!     println!("loss {value}");
//! }
//! ```
//!
//! Run under `mpirun -np 2 target/release/examples/digits_ddp` (docs/scaling.md: what runs where,
//! the bytes each step moves, and running on a cluster).

mod abort;
mod collective;
mod data_parallel;
mod shard;

pub use abort::abort_on_panic;
pub use collective::{
    all_reduce_mean, all_reduce_sum, broadcast, check_same_parameters, parameter_hash,
};
pub use data_parallel::DataParallel;
pub use mpi;
pub use shard::{shard, shard_range};

#[cfg(doc)]
use crate::Differentiable;
