//! [`DataParallel`]: a training step on this rank's shard of a batch, the gradients of all
//! ranks combined into the whole batch's, and the optimizer's step.

use mpi::datatype::Equivalence;
use mpi::traits::Communicator;

use super::collective::{broadcast, layout_hash, pack, reduce_sum, unpack};
use super::shard::shard_range;
use crate::data::Examples;
use crate::{Differentiable, Element, Tensor};

/// Data-parallel training of one parameter structure over the ranks of an MPI communicator, as
/// PyTorch's `DistributedDataParallel`: every rank holds the same parameters and the same
/// optimizer, runs the same loop over the same global batches, and computes the gradient of
/// its shard of each; [`step`](Self::step) combines the shards' gradients into the whole
/// batch's, so that every rank takes the same step, the one a single process would take on the
/// whole batch (up to the order of the additions).
///
/// Per step it moves the gradient and the loss as one buffer in one `MPI_Allreduce`.
pub struct DataParallel<'c, C: Communicator> {
    comm: &'c C,
    layout: u64,
}

impl<'c, C: Communicator> DataParallel<'c, C> {
    /// Training of `params` over the ranks of `comm`: copies rank 0's `params` to every rank
    /// ([`broadcast`](super::broadcast)), so that all start from the same ones. Every rank of
    /// `comm` must call it.
    ///
    /// # Panics
    /// On every rank, when the ranks' `params` differ in their leaves (count, shape or element
    /// type), naming the first leaf that differs.
    #[track_caller]
    pub fn new<D>(comm: &'c C, params: &mut D) -> Self
    where
        D: Differentiable,
        D::Elem: Equivalence,
    {
        broadcast(comm, params);
        DataParallel {
            comm,
            layout: layout_hash(params),
        }
    }

    /// This process's rank in the communicator.
    pub fn rank(&self) -> usize {
        self.comm.rank() as usize
    }

    /// The number of ranks.
    pub fn ranks(&self) -> usize {
        self.comm.size() as usize
    }

    /// One training step on the global `batch`, which every rank passes the same: runs
    /// `value_and_grad(params, shard)` on this rank's [`shard_range`] of the batch, all-reduces
    /// the gradients weighted by the shards' sizes into the gradient of the whole batch, runs
    /// `update(params, &gradient)` (an optimizer's step) and returns the whole batch's loss.
    ///
    /// The loss must be a mean over the batch's examples (a mean cross-entropy, a mean squared
    /// error), as `DistributedDataParallel` assumes: the shards' gradients and losses, weighted
    /// by their sizes, then add up to the batch's. A rank whose shard is empty (a batch with
    /// fewer examples than ranks) does not call `value_and_grad` and adds zeros.
    ///
    /// # Panics
    /// On this rank, before it communicates: when the batch is empty, the loss is not a single
    /// element, or the parameters or the gradient no longer have the leaves of the parameters
    /// given to [`new`](Self::new) (count, shapes, element type), naming the leaf. The other
    /// ranks then wait for it: [`abort_on_panic`](super::abort_on_panic) ends the job instead.
    #[track_caller]
    pub fn step<D, B, F, U>(
        &self,
        params: &mut D,
        batch: &B,
        value_and_grad: F,
        update: U,
    ) -> D::Elem
    where
        D: Differentiable,
        D::Elem: Equivalence,
        B: Examples,
        F: FnOnce(&D, B::Batch) -> (Tensor<D::Elem>, D),
        U: FnOnce(&mut D, &D),
    {
        let examples = batch.examples();
        assert!(examples > 0, "DataParallel::step: the batch is empty");
        let range = shard_range(examples, self.rank(), self.ranks());
        let (value, mut grad) = if range.is_empty() {
            (D::Elem::from_f64(0.0), params.zeros_like())
        } else {
            let positions: Vec<usize> = range.clone().collect();
            let (value, grad) = value_and_grad(params, batch.select(&positions));
            assert!(
                value.len() == 1,
                "DataParallel::step: the loss has shape {:?}; it must have one element",
                value.shape()
            );
            (value.item(), grad)
        };
        // Checked here, on this rank alone: a collective that not every rank enters would hang.
        assert!(
            layout_hash(params) == self.layout,
            "DataParallel::step: the parameters' leaves (count, shapes or element type) are not \
             those DataParallel::new was given"
        );
        same_leaves(params, &grad);
        // Each shard's mean times its size: the sums over the shards add up to the batch's sum.
        let size = D::Elem::from_f64(range.len() as f64);
        let mut buffer = pack(&grad, &[value]);
        for x in &mut buffer {
            *x *= size;
        }
        let mut total = reduce_sum(self.comm, &buffer);
        let examples = D::Elem::from_f64(examples as f64);
        for x in &mut total {
            *x /= examples;
        }
        let loss = unpack(&mut grad, &total)[0];
        update(params, &grad);
        loss
    }
}

impl<C: Communicator> std::fmt::Debug for DataParallel<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataParallel")
            .field("rank", &self.rank())
            .field("ranks", &self.ranks())
            .finish_non_exhaustive()
    }
}

/// Panics naming the first leaf where `grad` differs in shape from `params`.
#[track_caller]
fn same_leaves<D: Differentiable>(params: &D, grad: &D) {
    let (p, g) = (params.leaves(), grad.leaves());
    assert!(
        g.len() == p.len(),
        "DataParallel::step: the gradient has {} leaves, the parameters {}; `value_and_grad` \
         must return the gradient of the parameters",
        g.len(),
        p.len()
    );
    for ((path, p), g) in params.leaf_paths("").iter().zip(p).zip(g) {
        assert!(
            g.shape() == p.shape(),
            "DataParallel::step: the gradient's leaf `{path}` has shape {:?}, the parameter's \
             {:?}; `value_and_grad` must return the gradient of the parameters",
            g.shape(),
            p.shape()
        );
    }
}
