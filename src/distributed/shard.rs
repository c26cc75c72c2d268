//! Deterministic sharding of examples by rank.

use std::ops::Range;

use mpi::traits::Communicator;

use crate::data::Examples;

/// The positions of rank `rank`'s shard of `examples` examples split over `ranks` ranks: a
/// contiguous block, the blocks in rank order, the first `examples % ranks` ranks taking one
/// example more than the others. Every position falls in exactly one rank's shard, the same
/// on every run; a rank gets an empty range when there are fewer examples than ranks.
///
/// ```
/// use rune_ad::distributed::shard_range;
///
/// let shards: Vec<_> = (0..3).map(|r| shard_range(32, r, 3)).collect();
/// assert_eq!(shards, [0..11, 11..22, 22..32]);
/// assert_eq!(shard_range(1, 1, 2), 1..1);
/// ```
///
/// # Panics
/// When `rank` is not below `ranks`.
#[track_caller]
pub fn shard_range(examples: usize, rank: usize, ranks: usize) -> Range<usize> {
    assert!(
        rank < ranks,
        "shard_range: rank {rank} is not below the number of ranks, {ranks}"
    );
    let (base, extra) = (examples / ranks, examples % ranks);
    let start = rank * base + rank.min(extra);
    start..start + base + usize::from(rank < extra)
}

/// This rank's shard of `data` (a data set or a batch: a tensor along its first axis, a `Vec`,
/// or a tuple of them, as a [`DataLoader`](crate::data::DataLoader) takes): the examples at
/// [`shard_range`] for the rank of `comm`, in order. Over the ranks, every example is in
/// exactly one shard.
///
/// Sharding each batch of a loader that every rank runs with the same seed gives each rank its
/// part of the same global batch (what [`DataParallel::step`](super::DataParallel::step)
/// does); sharding the data set once gives each rank data of its own to load from.
pub fn shard<C: Communicator, X: Examples>(comm: &C, data: &X) -> X::Batch {
    let range = shard_range(data.examples(), comm.rank() as usize, comm.size() as usize);
    data.select(&range.collect::<Vec<_>>())
}
