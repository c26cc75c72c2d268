//! A tensor padded along its first axis whose elements are not yet written out.
//!
//! `pad` of the first axis alone around row-major elements (the shift `y[..n-1]` padded by one
//! in front, a sequence padded to a length) is the input's elements with runs of the fill
//! before and after them. Held as such ([`Padded`]), a fused region reads it in place, the fill
//! where it lies outside the input ([`Tensor::padded_parts`]), and `shrink` of its inside is a
//! view of the input: the copy a pad makes, in an RK4 stage forward and in each stage's
//! backward pass (`shrink`'s VJP pads its cotangent), is not made at all where the padded
//! tensor only feeds fused regions. Anything else that reads the elements writes them out
//! once, on its first read, and every clone shares that copy.

use std::sync::{Arc, OnceLock};

use ndarray::{ArcArray, Dimension, IxDyn};

use super::{Repr, Tensor};
use crate::copy::extend_elems;

/// The fewest elements a padded tensor has for `pad` to leave it unwritten: below, the copy
/// is too small to be worth the shared handle (and a small model's loop reads its tensors
/// with ops that need the elements).
pub(crate) const LAZY_PAD: usize = 256;

/// `base` (row-major) with `before` elements of `fill` in front and `after` behind, of
/// `shape`.
pub(super) struct Padded<T> {
    base: ArcArray<T, IxDyn>,
    before: usize,
    after: usize,
    fill: T,
    shape: IxDyn,
    /// The elements written out, on the first read that needs them.
    full: OnceLock<ArcArray<T, IxDyn>>,
    /// Writes the elements out (`Padded::write`, a function pointer so that reading needs no
    /// `T: Clone` bound).
    write: fn(&Padded<T>) -> ArcArray<T, IxDyn>,
}

impl<T> Padded<T> {
    #[inline]
    pub(super) fn shape(&self) -> &IxDyn {
        &self.shape
    }

    /// The elements, written out on the first call.
    #[inline]
    pub(super) fn full(&self) -> &ArcArray<T, IxDyn> {
        self.full.get_or_init(|| (self.write)(self))
    }

    /// The elements in a new array of their own (not the shared copy [`Padded::full`] keeps,
    /// which writing to would copy again), unless that copy is written already.
    pub(super) fn owned(self: Arc<Self>) -> ArcArray<T, IxDyn> {
        match self.full.get() {
            Some(full) => {
                let full = full.clone();
                // The copy is this array's alone once the handle goes (when it is the last).
                drop(self);
                full
            }
            None => (self.write)(&self),
        }
    }

    /// The first element in row-major order, if any.
    #[inline]
    pub(super) fn first(&self) -> Option<&T> {
        match (self.before, self.base.first()) {
            (0, Some(v)) => Some(v),
            _ if self.shape.size() > 0 => Some(&self.fill),
            _ => None,
        }
    }

    fn data(&self) -> &[T] {
        self.base
            .as_slice()
            .expect("a padded tensor's input is row-major")
    }
}

impl<T: Clone> Padded<T> {
    fn write(&self) -> ArcArray<T, IxDyn> {
        let mut out = Vec::with_capacity(self.shape.size());
        out.resize(self.before, self.fill.clone());
        extend_elems(&mut out, self.data());
        out.resize(out.len() + self.after, self.fill.clone());
        ArcArray::from_shape_vec(self.shape.clone(), out).expect("one element per element")
    }
}

impl<T: Clone> Tensor<T> {
    /// `base` (row-major: [`Tensor::as_slice`] holds) with `before` elements of `fill` in front
    /// and `after` behind, of `shape` (`shape`'s size is their sum), its elements not written.
    pub(crate) fn padded(
        base: &Tensor<T>,
        before: usize,
        after: usize,
        fill: T,
        shape: &[usize],
    ) -> Tensor<T> {
        debug_assert!(base.as_slice().is_some(), "padded: a row-major input");
        debug_assert_eq!(before + base.len() + after, shape.iter().product::<usize>());
        Tensor {
            repr: Repr::Padded(Arc::new(Padded {
                base: base.to_shared(),
                before,
                after,
                fill,
                shape: IxDyn(shape),
                full: OnceLock::new(),
                write: Padded::write,
            })),
        }
    }
}

impl<T> Tensor<T> {
    /// For a tensor [`Tensor::padded`] made whose elements are not written out: its input's
    /// elements, how many elements of the fill come before them, and the fill.
    #[inline]
    pub(crate) fn padded_parts(&self) -> Option<(&[T], usize, &T)> {
        match &self.repr {
            Repr::Padded(p) if p.full.get().is_none() => Some((p.data(), p.before, &p.fill)),
            _ => None,
        }
    }

    /// For a padded tensor, its input, when `ranges` (a `shrink` of this tensor, checked) cut
    /// out exactly that: `shrink` undoing `pad`.
    pub(crate) fn unpadded(&self, ranges: &[(usize, usize)]) -> Option<Tensor<T>> {
        let Repr::Padded(p) = &self.repr else {
            return None;
        };
        let row: usize = p.shape.slice()[1..].iter().product();
        let (&(start, end), rest) = ranges.split_first()?;
        let whole_rows = rest
            .iter()
            .zip(&p.shape.slice()[1..])
            .all(|(&r, &d)| r == (0, d));
        (whole_rows && row > 0 && start * row == p.before && end * row == p.before + p.base.len())
            .then(|| Tensor::from_shared(p.base.clone()))
    }
}
