//! Collectives over a [`Differentiable`] value: its leaves packed into one buffer, moved by one
//! MPI collective, unpacked; and the checks that the ranks agree on the structure and on the
//! parameters.

use mpi::collective::SystemOperation;
use mpi::datatype::{Equivalence, PartitionMut};
use mpi::traits::{Communicator, CommunicatorCollectives, Root};
use mpi::Count;

use crate::ndarray::Ix2;
use crate::{Differentiable, Element, Tensor};

/// Sums `value` across the ranks of `comm`, leaf by leaf: afterwards every rank holds the sum of
/// every rank's `value` (the same on every rank, as MPI's all-reduce gives it), as
/// `torch.distributed.all_reduce`.
///
/// The leaves go as one buffer, in one `MPI_Allreduce`; before it, one collective of two
/// integers checks that every rank's `value` has the same leaves. Every rank of `comm` must
/// call it.
///
/// # Panics
/// On every rank, when the ranks' values differ in their leaves (count, shape or element type),
/// naming the first leaf that differs and its shape on each rank.
#[track_caller]
pub fn all_reduce_sum<C, D>(comm: &C, value: &mut D)
where
    C: Communicator,
    D: Differentiable,
    D::Elem: Equivalence,
{
    reduce_leaves("all_reduce_sum", comm, value, D::Elem::from_f64(1.0));
}

/// Averages `value` across the ranks of `comm`, leaf by leaf: the sum of
/// [`all_reduce_sum`], each element divided by the number of ranks. A gradient averaged so is
/// the gradient of the mean loss over the ranks' batches when they are all the same size.
///
/// # Panics
/// As [`all_reduce_sum`].
#[track_caller]
pub fn all_reduce_mean<C, D>(comm: &C, value: &mut D)
where
    C: Communicator,
    D: Differentiable,
    D::Elem: Equivalence,
{
    let ranks = D::Elem::from_f64(comm.size() as f64);
    reduce_leaves("all_reduce_mean", comm, value, ranks);
}

/// The leaves of `value` summed over the ranks, each element divided by `divisor` (exactly, not
/// multiplied by its reciprocal), after the layout check `op` names.
#[track_caller]
fn reduce_leaves<C, D>(op: &str, comm: &C, value: &mut D, divisor: D::Elem)
where
    C: Communicator,
    D: Differentiable,
    D::Elem: Equivalence,
{
    check_layout(op, comm, value);
    let mut sum = reduce_sum(comm, &pack(value, &[]));
    if divisor != D::Elem::from_f64(1.0) {
        for x in &mut sum {
            *x /= divisor;
        }
    }
    unpack(value, &sum);
}

/// Copies rank 0's `value` to every rank of `comm` (parameters before training, so that every
/// rank starts from the same ones), in one `MPI_Bcast` of its leaves packed, and its buffers
/// ([`Differentiable::buffers`]: a batch norm's running statistics) after them, as PyTorch's
/// `DistributedDataParallel` broadcasts a module's buffers.
///
/// # Panics
/// As [`all_reduce_sum`].
#[track_caller]
pub fn broadcast<C, D>(comm: &C, value: &mut D)
where
    C: Communicator,
    D: Differentiable,
    D::Elem: Equivalence,
{
    check_layout("broadcast", comm, value);
    let buffers: Vec<D::Elem> = value
        .buffers("")
        .iter()
        .flat_map(|(_, b)| b.to_vec())
        .collect();
    let mut buffer = pack(value, &buffers);
    comm.process_at_rank(0).broadcast_into(&mut buffer[..]);
    let mut rest = unpack(value, &buffer);
    for (_, b) in value.buffers_mut("") {
        let n = b.len();
        *b = Tensor::from_vec(rest[..n].to_vec(), b.shape());
        rest = &rest[n..];
    }
}

/// A hash of `value`'s leaves: their shapes, element type and the bits of every element, in
/// leaf order (FNV-1a, the same on every platform and run). Equal values hash equally, and a
/// value that differs in one bit almost surely hashes differently.
pub fn parameter_hash<D: Differentiable>(value: &D) -> u64 {
    let mut hash = Fnv::new();
    for leaf in value.leaves() {
        hash.add(leaf_hash(leaf));
    }
    hash.0
}

/// Checks that every rank of `comm` holds the same `params`, bit for bit, and returns their
/// [`parameter_hash`]: a debugging aid for data-parallel training, where the ranks' parameters
/// must stay identical (they start from one [`broadcast`] and take the same steps). It moves one
/// hash per leaf and rank.
///
/// # Panics
/// On every rank, when the ranks' `params` differ, naming the first leaf that differs and the
/// ranks that disagree on it; or, as [`all_reduce_sum`], when their leaves differ in shape.
#[track_caller]
pub fn check_same_parameters<C, D>(comm: &C, params: &D) -> u64
where
    C: Communicator,
    D: Differentiable,
{
    check_layout("check_same_parameters", comm, params);
    let mine: Vec<u64> = params.leaves().into_iter().map(leaf_hash).collect();
    let leaves = mine.len();
    let mut all = vec![0_u64; leaves * comm.size() as usize];
    comm.all_gather_into(&mine[..], &mut all[..]);
    for (i, path) in params.leaf_paths("").iter().enumerate() {
        let first = all[i];
        if let Some(rank) = (1..comm.size() as usize).find(|&r| all[r * leaves + i] != first) {
            panic!(
                "check_same_parameters: leaf `{path}` differs between rank 0 (hash {first:#018x}) \
                 and rank {rank} (hash {:#018x}); the ranks' parameters have diverged",
                all[rank * leaves + i]
            );
        }
    }
    parameter_hash(params)
}

/// The leaves of `value` in order, then `extra`, as one buffer.
pub(super) fn pack<D: Differentiable>(value: &D, extra: &[D::Elem]) -> Vec<D::Elem> {
    let leaves = value.leaves();
    let len = leaves.iter().map(|l| l.len()).sum::<usize>() + extra.len();
    let mut buffer = Vec::with_capacity(len);
    for leaf in leaves {
        extend_row_major(&mut buffer, leaf);
    }
    buffer.extend_from_slice(extra);
    buffer
}

/// Appends the elements of `leaf` in row-major order. A gradient of a matrix product is often
/// column-major (the transpose of a row-major product): its rows are copied as 2-d strided rows,
/// many times faster than the element-by-element walk of an n-d view.
fn extend_row_major<E: Element>(buffer: &mut Vec<E>, leaf: &Tensor<E>) {
    if let Some(s) = leaf.as_slice() {
        buffer.extend_from_slice(s);
    } else if let Ok(matrix) = leaf.view().into_dimensionality::<Ix2>() {
        for row in matrix.rows() {
            buffer.extend(row.iter().copied());
        }
    } else {
        buffer.extend(leaf.view().iter().copied());
    }
}

/// Sets the leaves of `value` from the start of `buffer`, as [`pack`] laid them out, and
/// returns the rest (what `pack` appended).
pub(super) fn unpack<'b, D: Differentiable>(value: &mut D, buffer: &'b [D::Elem]) -> &'b [D::Elem] {
    let mut at = 0;
    for leaf in value.leaves_mut() {
        let n = leaf.len();
        *leaf = Tensor::from_vec(buffer[at..at + n].to_vec(), leaf.shape());
        at += n;
    }
    &buffer[at..]
}

/// The elementwise sum of every rank's `buffer`, on every rank.
pub(super) fn reduce_sum<C, E>(comm: &C, buffer: &[E]) -> Vec<E>
where
    C: Communicator,
    E: Element + Equivalence,
{
    let mut sum = vec![E::from_f64(0.0); buffer.len()];
    comm.all_reduce_into(buffer, &mut sum[..], SystemOperation::sum());
    sum
}

/// The hash of the leaves' layout: the element type, then each leaf's shape.
pub(super) fn layout_hash<D: Differentiable>(value: &D) -> u64 {
    let mut hash = Fnv::new();
    hash.bytes(<D::Elem as Element>::NAME.as_bytes());
    let buffers = value.buffers("");
    let tensors = value
        .leaves()
        .into_iter()
        .chain(buffers.iter().map(|(_, b)| *b));
    for (k, leaf) in tensors.enumerate() {
        hash.add(k as u64);
        hash.add(leaf.ndim() as u64);
        for &n in leaf.shape() {
            hash.add(n as u64);
        }
    }
    hash.0
}

/// Panics on every rank, naming the first leaf that differs, unless every rank's `value` has the
/// same leaves: one all-reduce of the layout hash and its complement under `max`, which gives
/// the largest and (complemented) the smallest hash.
#[track_caller]
pub(super) fn check_layout<C: Communicator, D: Differentiable>(op: &str, comm: &C, value: &D) {
    let hash = layout_hash(value);
    let mine = [hash, !hash];
    let mut max = [0_u64; 2];
    comm.all_reduce_into(&mine[..], &mut max[..], SystemOperation::max());
    if max[0] != !max[1] {
        layout_mismatch(op, comm, value);
    }
}

/// Gathers every rank's leaves (paths, element type, shapes) and panics naming the first one
/// that differs from rank 0's.
#[track_caller]
fn layout_mismatch<C: Communicator, D: Differentiable>(op: &str, comm: &C, value: &D) -> ! {
    let describe = |path: &String, leaf: &&Tensor<D::Elem>| {
        format!("`{path}` {} {:?}", <D::Elem as Element>::NAME, leaf.shape())
    };
    let buffers = value.buffers("");
    let lines: Vec<String> = value
        .leaf_paths("")
        .iter()
        .zip(value.leaves().iter())
        .map(|(path, leaf)| describe(path, leaf))
        .chain(
            buffers
                .iter()
                .map(|(path, b)| format!("buffer {}", describe(path, b))),
        )
        .collect();
    let all = gather_lines(comm, &lines.join("\n"));
    let rank0: Vec<&str> = all[0].lines().collect();
    for (rank, text) in all.iter().enumerate().skip(1) {
        let theirs: Vec<&str> = text.lines().collect();
        let first = (0..rank0.len().max(theirs.len())).find(|&i| rank0.get(i) != theirs.get(i));
        if let Some(i) = first {
            let show = |leaf: Option<&&str>| leaf.map_or("no leaf".to_owned(), |s| s.to_string());
            panic!(
                "{op}: the ranks hold different structures (every rank must pass the same \
                 leaves): leaf {i} is {} on rank 0 and {} on rank {rank} ({} leaves on rank 0, \
                 {} on rank {rank})",
                show(rank0.get(i)),
                show(theirs.get(i)),
                rank0.len(),
                theirs.len()
            );
        }
    }
    unreachable!("{op}: the layout hashes differ, yet every rank describes the same leaves");
}

/// Every rank's `text`, in rank order.
fn gather_lines<C: Communicator>(comm: &C, text: &str) -> Vec<String> {
    let ranks = comm.size() as usize;
    let len = Count::try_from(text.len()).expect("a structure's description fits an MPI count");
    let mut lens = vec![0 as Count; ranks];
    comm.all_gather_into(&len, &mut lens[..]);
    let displs: Vec<Count> = lens
        .iter()
        .scan(0, |at, &n| {
            let start = *at;
            *at += n;
            Some(start)
        })
        .collect();
    let mut bytes = vec![0_u8; lens.iter().map(|&n| n as usize).sum()];
    let mut partition = PartitionMut::new(&mut bytes[..], &lens[..], &displs[..]);
    comm.all_gather_varcount_into(text.as_bytes(), &mut partition);
    (0..ranks)
        .map(|r| {
            let (start, n) = (displs[r] as usize, lens[r] as usize);
            String::from_utf8_lossy(&bytes[start..start + n]).into_owned()
        })
        .collect()
}

/// The hash of one leaf: its shape and the bits of its elements in row-major order.
fn leaf_hash<E: Element>(leaf: &Tensor<E>) -> u64 {
    let mut hash = Fnv::new();
    hash.bytes(E::NAME.as_bytes());
    for &n in leaf.shape() {
        hash.add(n as u64);
    }
    for x in leaf.view().iter() {
        // Exact for `f32` and `f64`: `f64` holds every `f32`.
        hash.add(x.to_f64().map_or(0, f64::to_bits));
    }
    hash.0
}

/// FNV-1a, 64 bits: a hash the same on every platform, build and run (std's `DefaultHasher`
/// promises neither).
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn add(&mut self, x: u64) {
        self.bytes(&x.to_le_bytes());
    }
}
