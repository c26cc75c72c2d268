//! Large loops split across threads, with the `parallel` feature.
//!
//! Without the feature everything runs on the calling thread. With it, a fused region of at
//! least [`MIN_PARALLEL_LEN`] elements and a matrix product of at least
//! [`MIN_PARALLEL_GEMM`] multiply-adds run on rayon's thread pool: the global one, sized by
//! `RAYON_NUM_THREADS` (the number of cores by default), or the pool of a
//! `rayon::ThreadPool::install` around the call. A pool of one thread runs everything on it,
//! as without the feature.
//!
//! A split loop gives the same results, bit for bit, as the loop on one thread: elementwise
//! values do not depend on which thread computes them, and a fused reduction splits its loop
//! at multiples of the block of the runtime's pairwise sums (128 elements), so that its block
//! sums, joined in order, are the same list.

/// Fused regions of fewer elements run on the calling thread: below this, splitting costs
/// more than it saves.
pub const MIN_PARALLEL_LEN: usize = 1 << 15;

/// Matrix products of fewer multiply-adds (`m · k · n`) run on the calling thread.
pub const MIN_PARALLEL_GEMM: usize = 1 << 18;

/// The number of threads a loop is split across: 1 without the `parallel` feature.
#[inline]
pub fn threads() -> usize {
    #[cfg(feature = "parallel")]
    {
        rayon::current_num_threads()
    }
    #[cfg(not(feature = "parallel"))]
    {
        1
    }
}

/// The ranges a loop over `0..len` is split into, each starting at a multiple of `align`
/// (about two per thread, to even out the threads' speeds), or `None` when it runs on the
/// calling thread.
#[cfg(feature = "parallel")]
pub(crate) fn split(len: usize, align: usize) -> Option<Vec<std::ops::Range<usize>>> {
    let threads = threads();
    if threads < 2 || len < MIN_PARALLEL_LEN {
        return None;
    }
    let pieces = 2 * threads;
    let step = len.div_ceil(pieces).div_ceil(align) * align;
    Some(
        (0..len)
            .step_by(step)
            .map(|start| start..(start + step).min(len))
            .collect(),
    )
}

/// `f` applied to every item on the thread pool, the results in the items' order.
#[cfg(feature = "parallel")]
pub(crate) fn map_items<I: Send, R: Send>(items: Vec<I>, f: impl Fn(I) -> R + Sync) -> Vec<R> {
    use rayon::prelude::*;
    items.into_par_iter().map(&f).collect()
}

#[cfg(all(test, feature = "parallel"))]
mod tests {
    use super::*;

    #[test]
    fn split_ranges_cover_the_loop_in_order_at_aligned_starts() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build();
        let ranges = pool.expect("a thread pool").install(|| split(100_003, 128));
        let ranges = ranges.expect("three threads split a loop of 100,003");
        assert_eq!(ranges.len(), 6);
        assert_eq!(ranges.first().map(|r| r.start), Some(0));
        assert_eq!(ranges.last().map(|r| r.end), Some(100_003));
        for pair in ranges.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
        assert!(ranges.iter().all(|r| r.start % 128 == 0 && !r.is_empty()));
    }
}
