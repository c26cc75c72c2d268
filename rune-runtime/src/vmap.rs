//! Batching: what `f_vmap` and its derivatives take, and the shapes and axes their batched
//! bodies compute.
//!
//! `#[differentiable(vmap)]` writes a batched twin of the function: the same body on tensors
//! that may carry a leading batch axis, each with a `bool` saying whether it does, and each op
//! rewritten by its batching rule (`rune_ops::Batching`) into ordinary ops of the op table
//! whose configuration the helpers here compute from those flags. The twin is itself
//! `#[differentiable]`, so every derivative of the batched function is derived as any other
//! function's is, and the batched derivatives (`f_grad_vmap`, ..) are derivatives of the twin
//! with the differentiated arguments batched.

use crate::{Differentiable, Element, Tensor};

/// An argument batched along its leading axis: `f_vmap(Batch(&xs), &w)` maps `f` over the
/// rows of `xs` with `w` shared, like `jax.vmap(f, in_axes=(0, None))(xs, w)`.
#[derive(Clone, Copy, Debug)]
pub struct Batch<A>(pub A);

/// An argument of a batched function (`f_vmap`, `f_grad_vmap`, ..): a tensor as the function
/// declares it, shared by every example, or [`Batch`] of one, whose leading axis runs over the
/// examples.
pub trait VmapArg<X> {
    /// The tensor and whether its leading axis is the batch axis.
    fn vmap_arg(&self) -> (&X, bool);
}

/// Tensors of floats and structures of them ([`Differentiable`]), shared or batched.
impl<X: Differentiable> VmapArg<X> for X {
    fn vmap_arg(&self) -> (&X, bool) {
        (self, false)
    }
}

impl<X: Differentiable> VmapArg<X> for &X {
    fn vmap_arg(&self) -> (&X, bool) {
        (self, false)
    }
}

impl<X: Differentiable> VmapArg<X> for Batch<X> {
    fn vmap_arg(&self) -> (&X, bool) {
        (&self.0, true)
    }
}

impl<X: Differentiable> VmapArg<X> for Batch<&X> {
    fn vmap_arg(&self) -> (&X, bool) {
        (self.0, true)
    }
}

/// Masks and indices, shared or batched.
macro_rules! constant_tensors {
    ($($t:ty),*) => {$(
        impl VmapArg<Tensor<$t>> for Tensor<$t> {
            fn vmap_arg(&self) -> (&Tensor<$t>, bool) {
                (self, false)
            }
        }

        impl VmapArg<Tensor<$t>> for &Tensor<$t> {
            fn vmap_arg(&self) -> (&Tensor<$t>, bool) {
                (self, false)
            }
        }

        impl VmapArg<Tensor<$t>> for Batch<Tensor<$t>> {
            fn vmap_arg(&self) -> (&Tensor<$t>, bool) {
                (&self.0, true)
            }
        }

        impl VmapArg<Tensor<$t>> for Batch<&Tensor<$t>> {
            fn vmap_arg(&self) -> (&Tensor<$t>, bool) {
                (self.0, true)
            }
        }
    )*};
}
constant_tensors!(bool, i64);

/// What `g_vmap(Batch(x), ..)` called inside a `#[differentiable]` function reads of `x`: its
/// leading length (a tensor's, or a structure's first leaf's).
pub trait VmapLen {
    /// The leading length, `None` for a 0-d tensor or a structure without leaves.
    fn vmap_len(&self) -> Option<usize>;
}

impl<X: Differentiable> VmapLen for X {
    fn vmap_len(&self) -> Option<usize> {
        vmap_leaf_shape(self).first().copied()
    }
}

impl VmapLen for Tensor<bool> {
    fn vmap_len(&self) -> Option<usize> {
        self.shape().first().copied()
    }
}

impl VmapLen for Tensor<i64> {
    fn vmap_len(&self) -> Option<usize> {
        self.shape().first().copied()
    }
}

/// The batch length of a call of `function` inside a `#[differentiable]` function, from its
/// `Batch` arguments' leading lengths.
///
/// # Panics
/// When one is 0-d, or two disagree.
#[track_caller]
pub fn vmap_call_size(function: &str, lens: &[Option<usize>]) -> usize {
    let mut size = None;
    for (k, len) in lens.iter().enumerate() {
        let Some(len) = *len else {
            panic!("{function}: `Batch` argument {k} is 0-d; it needs a batch axis");
        };
        match size {
            Some(n) if n != len => {
                panic!("{function}: `Batch` arguments disagree on the batch length: {n} and {len}")
            }
            _ => size = Some(len),
        }
    }
    size.expect("a batched call has a `Batch` argument")
}

/// The shape whose leading length is a structure's batch length: its first leaf's.
pub fn vmap_leaf_shape<X: Differentiable>(x: &X) -> &[usize] {
    x.leaves().first().map_or(&[], |leaf| leaf.shape())
}

/// A structure with a batch axis of length `n` on every leaf: itself when it has one, else
/// each leaf repeated (see [`vmap_batched`]).
pub fn vmap_batched_structure<X: Differentiable + Clone>(x: &X, batched: bool, n: usize) -> X {
    let mut out = x.clone();
    if !batched {
        for leaf in out.leaves_mut() {
            *leaf = leaf.repeated(n);
        }
    }
    out
}

/// A function marked `#[differentiable(vmap)]` (implemented for its hidden type): what a call
/// of it from the body of another such function needs.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no batched form: mark it `#[differentiable(vmap)]` to call it from \
               a function under `vmap`",
    label = "called from a batched function"
)]
pub trait Batched {}

/// Checks, at compile time, that a function called from a batched body is batched too.
pub fn vmap_callee<F: Batched>() {}

/// The batch length of a call of `function`: the common leading length of the batched
/// arguments.
///
/// # Panics
/// When no argument is batched, a batched argument is 0-d, or two batched arguments disagree.
#[track_caller]
pub fn vmap_size(function: &str, args: &[(&str, &[usize], bool)]) -> usize {
    let mut size: Option<(&str, usize)> = None;
    for &(name, shape, _) in args.iter().filter(|a| a.2) {
        let Some(&len) = shape.first() else {
            panic!("{function}: `{name}` is batched (`Batch`) but 0-d; it needs a batch axis");
        };
        match size {
            Some((first, n)) if n != len => panic!(
                "{function}: batched arguments disagree on the batch length: `{first}` has {n} \
                 examples, `{name}` (shape {shape:?}) has {len}"
            ),
            Some(_) => {}
            None => size = Some((name, len)),
        }
    }
    match size {
        Some((_, n)) => n,
        None => panic!(
            "{function}: no argument is batched; wrap the ones that carry a batch axis in \
             `Batch(..)`"
        ),
    }
}

/// `x` with a batch axis of length `n`: `x` itself when it has one, else `x` repeated, each
/// example a copy of it that shares its elements (nothing is copied until written to; a
/// product with it reads `x` from cache once per example).
pub fn vmap_batched<T: Element>(x: &Tensor<T>, batched: bool, n: usize) -> Tensor<T> {
    if batched {
        x.clone()
    } else {
        x.repeated(n)
    }
}

/// The cotangent that makes a pullback of the batched function give per-example gradients:
/// ones, of the value's shape.
///
/// # Panics
/// When an example's value has more than one element (a gradient needs one).
#[track_caller]
pub fn vmap_ones_per_example<T: Element>(function: &str, shape: &[usize], n: usize) -> Tensor<T> {
    let each: usize = shape[1..].iter().product();
    assert!(
        shape.first() == Some(&n) && each == 1,
        "{function}: each example's value must have one element to have a gradient; the \
         batched value has shape {shape:?}, {n} examples"
    );
    Tensor::ones(shape)
}

/// The shape of one example of a value of shape `shape`.
pub fn vmap_shape(shape: &[usize], batched: bool) -> &[usize] {
    &shape[batched as usize..]
}

/// `shape` with the batch length first unless `batched` says it has it: the shape a result
/// is broadcast to on its way out, and (negated) one example's `broadcast_to` shape as the
/// batched value's.
pub fn vmap_out_shape(shape: &[usize], batched: bool, n: usize) -> Vec<usize> {
    if batched {
        shape.to_vec()
    } else {
        core::iter::once(n).chain(shape.iter().copied()).collect()
    }
}

/// The shape an operand of an elementwise op takes so that NumPy's broadcasting aligns its
/// examples with those of the `others`: a batched operand of fewer axes per example than
/// another gets unit axes after its batch axis.
pub fn vmap_align(shape: &[usize], batched: bool, others: &[(&[usize], bool)]) -> Vec<usize> {
    let rank = shape.len() - batched as usize;
    let widest = others
        .iter()
        .map(|(s, b)| s.len() - *b as usize)
        .max()
        .unwrap_or(0);
    if !batched || rank >= widest {
        return shape.to_vec();
    }
    let mut aligned = vec![shape[0]];
    aligned.extend(core::iter::repeat_n(1, widest - rank));
    aligned.extend(&shape[1..]);
    aligned
}

/// The shape of an operand of an elementwise op that a batched function holds as written,
/// shared by every example (a tensor from a `#[nodiff]` structure's field, a constant made in
/// the body, a number), for [`vmap_align`] to line the batched operands' examples up with it:
/// a tensor's own shape, a number's none.
pub trait VmapOperandShape {
    /// The operand's shape.
    fn vmap_operand_shape(&self) -> &[usize];
}

impl<T> VmapOperandShape for Tensor<T> {
    fn vmap_operand_shape(&self) -> &[usize] {
        self.shape()
    }
}

impl<T: Element> VmapOperandShape for T {
    fn vmap_operand_shape(&self) -> &[usize] {
        &[]
    }
}

impl VmapOperandShape for bool {
    fn vmap_operand_shape(&self) -> &[usize] {
        &[]
    }
}

/// An axis of one example as an axis of the batched value (negative axes count from the end
/// and stay).
pub fn vmap_axis(axis: isize, batched: bool) -> isize {
    if batched && axis >= 0 {
        axis + 1
    } else {
        axis
    }
}

/// Axes of one example as axes of the batched value.
pub fn vmap_axes(axes: &[isize], batched: bool) -> Vec<isize> {
    axes.iter().map(|&a| vmap_axis(a, batched)).collect()
}

/// Axes (as `usize`) of one example as axes of the batched value.
pub fn vmap_axes_usize(axes: &[usize], batched: bool) -> Vec<usize> {
    axes.iter().map(|&a| a + batched as usize).collect()
}

/// Every axis of a value of `ndim` axes but its batch axis.
pub fn vmap_all_axes(ndim: usize, batched: bool) -> Vec<isize> {
    (batched as usize..ndim).map(|a| a as isize).collect()
}

/// A permutation of one example's axes as one of the batched value's.
pub fn vmap_permutation(perm: &[usize], batched: bool) -> Vec<usize> {
    if !batched {
        return perm.to_vec();
    }
    core::iter::once(0)
        .chain(perm.iter().map(|a| a + 1))
        .collect()
}

/// One example's new shape (lengths, one of them `-1` at most) as the batched value's.
pub fn vmap_new_shape<L: Copy + TryInto<isize>>(
    shape: &[L],
    batched: bool,
    n: usize,
) -> Vec<isize> {
    let lengths = shape.iter().map(|&l| {
        l.try_into()
            .unwrap_or_else(|_| panic!("reshape: a length does not fit in `isize`"))
    });
    if batched {
        core::iter::once(n as isize).chain(lengths).collect()
    } else {
        lengths.collect()
    }
}

/// One example's ranges (`shrink`, `pad`) as the batched value's: the batch axis whole
/// (`shrink`) or unpadded (`pad`).
pub fn vmap_ranges(
    op: &str,
    ranges: &[(usize, usize)],
    batched: bool,
    n: usize,
) -> Vec<(usize, usize)> {
    if !batched {
        return ranges.to_vec();
    }
    let first = if op == "pad" { (0, 0) } else { (0, n) };
    core::iter::once(first)
        .chain(ranges.iter().copied())
        .collect()
}

/// How a batched `a.matmul(b)` is computed: each operand reshaped (a vector to a matrix, unit
/// batch axes after the batch axis to align the examples' batch axes), then the product
/// reshaped to drop the axes a vector operand added.
struct MatmulPlan {
    lhs: Vec<usize>,
    rhs: Vec<usize>,
    /// Whether the left operand is a vector per example (its row axis is dropped).
    lhs_vector: bool,
    /// Whether the right operand is a vector per example (its column axis is dropped).
    rhs_vector: bool,
}

fn matmul_plan(a: &[usize], a_batched: bool, b: &[usize], b_batched: bool) -> MatmulPlan {
    let (ea, eb) = (vmap_shape(a, a_batched), vmap_shape(b, b_batched));
    let (lhs_vector, rhs_vector) = (ea.len() == 1, eb.len() == 1);
    if !a_batched && !b_batched {
        return MatmulPlan {
            lhs: a.to_vec(),
            rhs: b.to_vec(),
            lhs_vector: false,
            rhs_vector: false,
        };
    }
    let ma: Vec<usize> = if lhs_vector {
        vec![1, ea[0]]
    } else {
        ea.to_vec()
    };
    let mb: Vec<usize> = if rhs_vector {
        vec![eb[0], 1]
    } else {
        eb.to_vec()
    };
    let stack = (ma.len().max(2) - 2).max(mb.len().max(2) - 2);
    let physical = |m: &[usize], batched: bool, n: usize| -> Vec<usize> {
        if !batched {
            return m.to_vec();
        }
        let pad = stack + 2 - m.len().max(2).min(stack + 2);
        core::iter::once(n)
            .chain(core::iter::repeat_n(1, pad))
            .chain(m.iter().copied())
            .collect()
    };
    let n = if a_batched { a[0] } else { b[0] };
    MatmulPlan {
        lhs: physical(&ma, a_batched, n),
        rhs: physical(&mb, b_batched, n),
        lhs_vector,
        rhs_vector,
    }
}

/// Whether a batched `a.matmul(b)` is computed as `b.matmul(&a.t())`: a shared matrix times
/// a batch of vectors is one matrix product that way, where the batch of matrix-vector
/// products would be one product per example.
pub fn vmap_matmul_swap(a: &[usize], a_batched: bool, b: &[usize], b_batched: bool) -> bool {
    !a_batched && b_batched && a.len() == 2 && b.len() == 2
}

/// The left operand's shape in a batched `matmul`.
pub fn vmap_matmul_lhs(a: &[usize], a_batched: bool, b: &[usize], b_batched: bool) -> Vec<usize> {
    matmul_plan(a, a_batched, b, b_batched).lhs
}

/// The right operand's shape in a batched `matmul`.
pub fn vmap_matmul_rhs(a: &[usize], a_batched: bool, b: &[usize], b_batched: bool) -> Vec<usize> {
    matmul_plan(a, a_batched, b, b_batched).rhs
}

/// The shape of a batched `matmul`'s result, of shape `product` as computed.
pub fn vmap_matmul_out(
    product: &[usize],
    a: &[usize],
    a_batched: bool,
    b: &[usize],
    b_batched: bool,
) -> Vec<usize> {
    if vmap_matmul_swap(a, a_batched, b, b_batched) {
        return product.to_vec();
    }
    let plan = matmul_plan(a, a_batched, b, b_batched);
    let mut out = product.to_vec();
    let len = out.len();
    match (plan.lhs_vector, plan.rhs_vector) {
        (true, true) => out.truncate(len - 2),
        (false, true) => out.truncate(len - 1),
        (true, false) => {
            out.remove(len - 2);
        }
        (false, false) => {}
    }
    out
}

/// What `len()` reads in a batched body, where `x.len()` is written `x.example_len(flag)`:
/// one example's number of elements of a tensor, the number of parts of a list of layers (the
/// same for every example).
pub trait ExampleLen {
    /// The length, for a value batched (`batched`) or not.
    fn example_len(&self, batched: bool) -> usize;
}

impl<T> ExampleLen for Tensor<T> {
    fn example_len(&self, batched: bool) -> usize {
        vmap_shape(self.shape(), batched).iter().product()
    }
}

impl<X> ExampleLen for Vec<X> {
    fn example_len(&self, _: bool) -> usize {
        self.len()
    }
}

impl<X> ExampleLen for [X] {
    fn example_len(&self, _: bool) -> usize {
        self.len()
    }
}

/// How many calls an op batched one call per example makes: one per example when an operand
/// is batched (and the images are not merged), else one.
pub fn vmap_each_len(batched: bool, n: usize) -> usize {
    if batched {
        n
    } else {
        1
    }
}

/// The ranges (`shrink`) that cut example `i` out of a batched value of shape `shape`.
pub fn vmap_example(shape: &[usize], i: usize) -> Vec<(usize, usize)> {
    core::iter::once((i, i + 1))
        .chain(shape[1..].iter().map(|&d| (0, d)))
        .collect()
}

/// The shape of an op batched one call per example, from the shape of its calls' results
/// stacked along a new leading axis: that axis is the batch axis when an operand was batched
/// (`batched`), dropped when the one call was unbatched, and split into the batch axis and the
/// images' axis when the call took merged images (`merged`, the receiver `receiver_batched`).
pub fn vmap_each_out(
    shape: &[usize],
    batched: bool,
    merged: bool,
    receiver_batched: bool,
    n: usize,
) -> Vec<usize> {
    if merged {
        vmap_split(&shape[1..], receiver_batched, n)
    } else {
        vmap_shape(shape, !batched).to_vec()
    }
}

/// A batched receiver of an op over images (`[N, ..]`), its batch axis merged into its first
/// axis: `[B, N, ..]` as `[B·N, ..]`.
///
/// # Panics
/// When one example is 0-d.
#[track_caller]
pub fn vmap_merge(op: &str, shape: &[usize], batched: bool) -> Vec<usize> {
    if !batched {
        return shape.to_vec();
    }
    assert!(
        shape.len() >= 2,
        "{op}: each example must have a leading axis of images; the batched value has shape \
         {shape:?}"
    );
    core::iter::once(shape[0] * shape[1])
        .chain(shape[2..].iter().copied())
        .collect()
}

/// The result of an op over merged images (`vmap_merge`), shape `[B·N, ..]`, with its batch
/// axis split out again: `[B, N, ..]`.
fn vmap_split(shape: &[usize], batched: bool, n: usize) -> Vec<usize> {
    if !batched {
        return shape.to_vec();
    }
    [n, shape[0] / n.max(1)]
        .into_iter()
        .chain(shape[1..].iter().copied())
        .collect()
}

/// The spec of a batched contraction: one example's spec `spec` (of `op`, `einsum` or the op
/// that is that contraction) with a letter for the batch axis added to the batched operands and
/// first in the output.
///
/// # Panics
/// When an operand's examples do not have one axis per letter, naming `op` and the shapes.
#[track_caller]
pub fn vmap_einsum(
    op: &str,
    spec: &str,
    a: &[usize],
    a_batched: bool,
    b: &[usize],
    b_batched: bool,
) -> String {
    let spec: String = spec.chars().filter(|c| !c.is_whitespace()).collect();
    let (inputs, out) = match spec.split_once("->") {
        Some((inputs, out)) => (inputs.to_string(), out.to_string()),
        None => {
            // NumPy's implicit output: the letters that appear once, in alphabetical order.
            let mut once: Vec<char> = spec
                .chars()
                .filter(|c| c.is_ascii_alphabetic() && spec.matches(*c).count() == 1)
                .collect();
            once.sort_unstable();
            (spec.clone(), once.into_iter().collect())
        }
    };
    let Some((sa, sb)) = inputs.split_once(',') else {
        // Malformed: `einsum` itself says how.
        return spec;
    };
    for (s, shape, batched) in [(sa, a, a_batched), (sb, b, b_batched)] {
        let example = vmap_shape(shape, batched);
        assert!(
            s.chars().count() == example.len(),
            "{op}: the subscripts `{s}` of `{spec}` do not fit an example of shape {example:?} \
             (the batched operand has shape {shape:?})"
        );
    }
    let letter = ('a'..='z')
        .chain('A'..='Z')
        .find(|c| !spec.contains(*c))
        .unwrap_or_else(|| panic!("{op}: `{spec}` leaves no letter for the batch axis"));
    let with = |s: &str, batched: bool| {
        if batched {
            format!("{letter}{s}")
        } else {
            s.to_string()
        }
    };
    let out = with(&out, a_batched || b_batched);
    format!("{},{}->{out}", with(sa, a_batched), with(sb, b_batched))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{concat, where_cond};

    /// Each batched product equals the products of its examples.
    #[test]
    fn matmul_plans_compute_each_example() {
        let cases: &[(&[usize], bool, &[usize], bool)] = &[
            (&[4, 3], true, &[3, 2], false),
            (&[4, 3], true, &[4, 3, 2], true),
            (&[3], false, &[4, 3, 2], true),
            (&[4, 2, 3], true, &[3], false),
            (&[4, 3], true, &[4, 3], true),
            (&[2, 3], false, &[4, 3], true),
            (&[4, 5, 2, 3], true, &[3, 2], false),
            (&[2, 3], false, &[4, 5, 3, 2], true),
            (&[4, 2, 3], true, &[5, 3, 2], false),
            (&[3], false, &[4, 3], true),
        ];
        for (k, &(sa, ab, sb, bb)) in cases.iter().enumerate() {
            let a = Tensor::<f64>::rand_uniform(sa, -1.0, 1.0, k as u64);
            let b = Tensor::<f64>::rand_uniform(sb, -1.0, 1.0, 100 + k as u64);
            let y = if vmap_matmul_swap(sa, ab, sb, bb) {
                b.matmul(&a.t())
            } else {
                a.reshape(&vmap_matmul_lhs(sa, ab, sb, bb))
                    .matmul(&b.reshape(&vmap_matmul_rhs(sa, ab, sb, bb)))
            };
            let y = y.reshape(&vmap_matmul_out(y.shape(), sa, ab, sb, bb));
            for i in 0..4 {
                let pick = |t: &Tensor<f64>, batched: bool| {
                    if batched {
                        t.index_select(0, &[i]).squeeze(0)
                    } else {
                        t.clone()
                    }
                };
                let expected = pick(&a, ab).matmul(&pick(&b, bb));
                let got = y.index_select(0, &[i]).squeeze(0);
                assert_eq!(got.shape(), expected.shape(), "case {k}");
                for (g, e) in got.to_vec().iter().zip(expected.to_vec()) {
                    assert!((g - e).abs() < 1e-12, "case {k}: {g} vs {e}");
                }
            }
        }
    }

    /// A repeated tensor is, to every op, the tensor its copies would make.
    #[test]
    fn a_repeated_tensor_reads_as_its_copies() {
        let x = Tensor::<f64>::rand_uniform(&[3, 2], -1.0, 1.0, 1);
        let r = vmap_batched(&x, false, 4);
        // Written out: `broadcast_to` of a new leading axis is itself copies of one example.
        let copies = Tensor::from_vec(x.broadcast_to(&[4, 3, 2]).to_vec(), &[4, 3, 2]);
        assert_eq!(r.shape(), &[4, 3, 2]);
        assert_eq!(r.len(), 24);
        assert_eq!(r, copies);
        assert_eq!(r.to_vec(), copies.to_vec());
        assert_eq!(r.clone().into_vec(), copies.to_vec());
        assert_eq!(
            r.reshape(&[12, 2]).to_vec(),
            copies.reshape(&[12, 2]).to_vec()
        );
        assert_eq!(r.permute(&[2, 0, 1]), copies.permute(&[2, 0, 1]));
        let cut = [(1, 3), (0, 3), (1, 2)];
        assert_eq!(r.shrink(&cut), copies.shrink(&cut));
        assert_eq!((&r * 2.0).to_vec(), (&copies * 2.0).to_vec());
        assert_eq!(r.tanh(), copies.tanh());
        assert_eq!(r.sum_axes(&[0], false), copies.sum_axes(&[0], false));
        let v = Tensor::<f64>::rand_uniform(&[4, 1, 3], -1.0, 1.0, 2);
        assert_eq!(v.matmul(&r), v.matmul(&copies));
        assert_eq!(r.t().matmul(&v.t()), copies.t().matmul(&v.t()));
        let small = vmap_batched(&Tensor::from_vec(vec![1.0f64, 2.0], &[2]), false, 2);
        assert_eq!(small.to_vec(), vec![1.0, 2.0, 1.0, 2.0]);
        // Writing copies the elements out: the original is untouched.
        let mut w = r.clone();
        w += &Tensor::ones(&[4, 3, 2]);
        assert_eq!(w.to_vec(), (&copies + 1.0).to_vec());
        assert_eq!(r, copies);
        assert_eq!(vmap_batched(&r, true, 4), copies);
    }

    /// Ops of shared values compute one example and repeat it, with the values of the copies.
    #[test]
    fn ops_of_repeated_tensors_stay_repeated() {
        let x = Tensor::<f64>::rand_uniform(&[3, 2], -1.0, 1.0, 3);
        let copies = Tensor::from_vec(x.broadcast_to(&[5, 3, 2]).to_vec(), &[5, 3, 2]);
        let r = vmap_batched(&x, false, 5);
        let row = Tensor::<f64>::rand_uniform(&[2], -1.0, 1.0, 4);
        let m = Tensor::<f64>::rand_uniform(&[2, 4], -1.0, 1.0, 5);
        let left = Tensor::<f64>::rand_uniform(&[6, 3], -1.0, 1.0, 6);
        let batch = Tensor::<f64>::rand_uniform(&[5, 3, 2], -1.0, 1.0, 7);
        let cases = [
            (r.tanh(), copies.tanh(), true),
            (&r * 2.0, &copies * 2.0, true),
            (2.0 - &r, 2.0 - &copies, true),
            (&r + &row, &copies + &row, true),
            (&r * &r.exp(), &copies * &copies.exp(), true),
            (r.matmul(&m), copies.matmul(&m), true),
            (left.matmul(&r), left.matmul(&copies), true),
            // A batched operand of as many axes: computed in full.
            (&r * &batch, &copies * &batch, false),
        ];
        for (k, (got, expected, repeated)) in cases.iter().enumerate() {
            assert_eq!(got, expected, "case {k}");
            assert_eq!(got.repeated_parts().is_some(), *repeated, "case {k}");
        }
    }

    /// Shape ops, reductions, selections and products that leave the leading axis compute one
    /// example of copies of one (a batched forward pass's shared values); those that reach it
    /// compute every copy. Each against the same op of the copies written out.
    #[test]
    fn ops_past_the_leading_axis_keep_copies_of_one_example() {
        let x = Tensor::<f64>::rand_uniform(&[3, 2], -1.0, 1.0, 11);
        let written = |t: &Tensor<f64>| Tensor::from_vec(t.to_vec(), t.shape());
        let r = x.broadcast_to(&[5, 3, 2]);
        let copies = written(&r);
        let y = Tensor::<f64>::rand_uniform(&[3, 4], -1.0, 1.0, 12);
        let (s, s_copies) = (
            vmap_batched(&y, false, 5),
            written(&y.broadcast_to(&[5, 3, 4])),
        );
        let x4 = Tensor::<f64>::rand_uniform(&[2, 3, 2], -1.0, 1.0, 13);
        let (r4, r4_copies) = (
            vmap_batched(&x4, false, 5),
            written(&x4.broadcast_to(&[5, 2, 3, 2])),
        );
        let stack = Tensor::<f64>::rand_uniform(&[2, 4, 3], -1.0, 1.0, 14);
        let one = Tensor::<f64>::rand_uniform(&[1, 4, 3], -1.0, 1.0, 15);
        let idx = Tensor::<i64>::from_vec(vec![2, 0], &[2]);
        let mask = r.lt(0.0);
        assert!(mask.repeated_parts().is_some());
        assert_eq!(mask, copies.lt(0.0));
        let cases = [
            (r.clone(), copies.clone(), true),
            (
                r.pad(&[(0, 0), (1, 0), (0, 1)], 0.5),
                copies.pad(&[(0, 0), (1, 0), (0, 1)], 0.5),
                true,
            ),
            (
                r.shrink(&[(0, 5), (1, 3), (0, 2)]),
                copies.shrink(&[(0, 5), (1, 3), (0, 2)]),
                true,
            ),
            (r.index_select(1, &idx), copies.index_select(1, &idx), true),
            (r.reshape(&[5, 6]), copies.reshape(&[5, 6]), true),
            (r.permute(&[0, 2, 1]), copies.permute(&[0, 2, 1]), true),
            (r.transpose(1, 2), copies.transpose(1, 2), true),
            (r.t(), copies.t(), true),
            (
                r.shrink(&[(0, 5), (0, 1), (0, 2)]).squeeze(1),
                copies.shrink(&[(0, 5), (0, 1), (0, 2)]).squeeze(1),
                true,
            ),
            (r.sum_axes(&[2], false), copies.sum_axes(&[2], false), true),
            (
                r.sum_axes(&[1, 2], true),
                copies.sum_axes(&[1, 2], true),
                true,
            ),
            (concat(&[&r, &s], 2), concat(&[&copies, &s_copies], 2), true),
            (r.t().matmul(&s), copies.t().matmul(&s_copies), true),
            (stack.matmul(&r4), stack.matmul(&r4_copies), true),
            (one.matmul(&r), one.matmul(&copies), true),
            (r4.matmul(&x.t()), r4_copies.matmul(&x.t()), true),
            (
                where_cond(&mask, &r, &0.5),
                where_cond(&copies.lt(0.0), &copies, &0.5),
                true,
            ),
            (
                where_cond(&mask, &x, &r),
                where_cond(&copies.lt(0.0), &x, &copies),
                true,
            ),
            // Ops that reach the leading axis compute every copy.
            (r.sum_axes(&[0], false), copies.sum_axes(&[0], false), false),
            (
                r.shrink(&[(1, 3), (0, 3), (0, 2)]),
                copies.shrink(&[(1, 3), (0, 3), (0, 2)]),
                false,
            ),
            (r.index_select(0, &idx), copies.index_select(0, &idx), false),
            (concat(&[&r, &r], 0), concat(&[&copies, &copies], 0), false),
            (r.permute(&[1, 0, 2]), copies.permute(&[1, 0, 2]), false),
        ];
        for (k, (got, expected, repeated)) in cases.iter().enumerate() {
            assert_eq!(got, expected, "case {k}");
            assert_eq!(got.repeated_parts().is_some(), *repeated, "case {k}");
        }
    }

    #[test]
    fn alignment_puts_unit_axes_after_the_batch_axis() {
        assert_eq!(
            vmap_align(&[4, 3], true, &[(&[2, 3], false)]),
            vec![4, 1, 3]
        );
        assert_eq!(
            vmap_align(&[4, 2, 3], true, &[(&[3], false)]),
            vec![4, 2, 3]
        );
        assert_eq!(vmap_align(&[3], false, &[(&[4, 2, 3], true)]), vec![3]);
        assert_eq!(vmap_axis(-1, true), -1);
        assert_eq!(vmap_axis(0, true), 1);
        assert_eq!(vmap_ranges("pad", &[(1, 2)], true, 4), vec![(0, 0), (1, 2)]);
        assert_eq!(
            vmap_ranges("shrink", &[(1, 2)], true, 4),
            vec![(0, 4), (1, 2)]
        );
    }

    #[test]
    fn contractions_get_a_letter_for_the_batch_axis() {
        let spec = |s, a: &[usize], fa, b: &[usize], fb| vmap_einsum("einsum", s, a, fa, b, fb);
        assert_eq!(
            spec("ij,jk->ik", &[5, 2, 3], true, &[3, 4], false),
            "aij,jk->aik"
        );
        assert_eq!(spec("a,b", &[2], false, &[5, 3], true), "a,cb->cab");
        // NumPy's implicit output: the letters that appear once, sorted.
        assert_eq!(
            spec("ij, jk", &[5, 2, 3], true, &[5, 3, 4], true),
            "aij,ajk->aik"
        );
        assert_eq!(
            vmap_einsum("dot", "i,i->", &[4, 3], true, &[3], false),
            "ai,i->a"
        );
    }

    #[test]
    #[should_panic(
        expected = "dot: the subscripts `i` of `i,i->` do not fit an example of shape [2, 3]"
    )]
    fn a_contraction_names_the_op_of_a_misfit() {
        vmap_einsum("dot", "i,i->", &[4, 2, 3], true, &[3], false);
    }

    #[test]
    fn images_merge_into_one_axis_and_split_again() {
        assert_eq!(
            vmap_merge("conv2d", &[4, 2, 3, 8, 8], true),
            vec![8, 3, 8, 8]
        );
        assert_eq!(vmap_merge("conv2d", &[2, 3, 8, 8], false), vec![2, 3, 8, 8]);
        assert_eq!(
            vmap_each_out(&[1, 8, 5, 6, 6], true, true, true, 4),
            vec![4, 2, 5, 6, 6]
        );
        assert_eq!(vmap_each_out(&[1, 2, 5], false, true, false, 4), vec![2, 5]);
        assert_eq!(
            vmap_each_out(&[4, 2, 5], true, false, false, 4),
            vec![4, 2, 5]
        );
        assert_eq!(
            vmap_each_out(&[1, 2, 5], false, false, false, 4),
            vec![2, 5]
        );
        assert_eq!(vmap_example(&[4, 2, 5], 3), vec![(3, 4), (0, 2), (0, 5)]);
    }
}
