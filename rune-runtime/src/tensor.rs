//! `Tensor<T>`: an n-dimensional array with shared, copy-on-write storage.
//!
//! Construction, access and conversion live here; the ops live in [`crate::ops`].

use std::fmt;

use arrayvec::ArrayVec;
use ndarray::{
    ArcArray, Array0, Array1, Array2, ArrayD, ArrayView0, ArrayView1, ArrayView2, ArrayViewD,
    CowArray, Dimension, IxDyn, ShapeBuilder,
};
use num_traits::{One, Zero};

use crate::error::{checked_size, OrPanic, ShapeError};
use crate::vmath::{fast_then_exact, Kernels};

mod convert;
mod padded;
pub(crate) mod small;

use padded::Padded;
pub(crate) use padded::LAZY_PAD;

/// An n-dimensional array of `T` (row-major), cheap to clone.
///
/// A tensor of at most four elements and four axes that an op computed holds its elements
/// and shape inline, without an allocation; any other is an [`ndarray::ArcArray`], which
/// cloning shares and writing to copies first when shared (or, inside the runtime, a shared
/// example repeated by `vmap`, or a padded tensor not yet written out). They are one type to
/// every method: which a tensor is shows only in speed. Float tensors (`T: Element`) are
/// differentiable; `Tensor<bool>` and `Tensor<i64>` serve as masks and indices.
#[derive(Clone)]
pub struct Tensor<T> {
    repr: Repr<T>,
}

/// The elements a tensor can hold inline.
///
/// Ops on tensors of a few elements (the state of a small ODE, the 0-d values taken out of a
/// parameter vector) cost what making their result costs: two allocations and an `IxDyn` for
/// an `ArcArray`, a copy of a few words inline. Four `f64`s and the shape fit in the size of an
/// `ArcArray` handle (96 bytes); more would make every tensor larger, and moving the results
/// of ops then costs calls to `memcpy` (sixteen elements, 168 bytes, ran W8 slower than none).
pub(crate) const INLINE: usize = 4;

/// The axes an inline tensor can have.
const INLINE_AXES: usize = 4;

#[derive(Clone)]
enum Repr<T> {
    Shared(ArcArray<T, IxDyn>),
    Inline(Inline<T>),
    /// `base` broadcast to `shape`, not copied: a value shared by every example of a batch
    /// (`vmap`'s per-example derivatives give each example a copy of a shared parameter).
    /// Reading sees the broadcast view; writing, or anything that needs the elements
    /// contiguous, copies them out first.
    /// Boxed, so that a tensor stays the size of an `ArcArray` handle.
    Repeated(Box<Repeated<T>>),
    /// A row-major tensor padded along its first axis, written out on the first read that
    /// needs the elements (`padded.rs`). Shared, so that clones share that copy.
    Padded(std::sync::Arc<Padded<T>>),
}

/// A repeated tensor's elements and shape.
#[derive(Clone)]
struct Repeated<T> {
    base: ArcArray<T, IxDyn>,
    shape: IxDyn,
}

/// A small tensor's shape and elements, in row-major order.
#[derive(Clone)]
struct Inline<T> {
    dims: [usize; INLINE_AXES],
    ndim: u8,
    data: ArrayVec<T, INLINE>,
}

impl<T> Inline<T> {
    #[inline]
    fn shape(&self) -> &[usize] {
        &self.dims[..self.ndim as usize]
    }
}

/// Whether a tensor of `shape` and `len` elements is held inline.
#[inline]
pub(crate) fn fits_inline(shape: &[usize], len: usize) -> bool {
    len <= INLINE && shape.len() <= INLINE_AXES
}

impl<T> Tensor<T> {
    /// Wraps an ndarray array.
    #[inline]
    pub fn from_array(data: ArrayD<T>) -> Self {
        Tensor {
            repr: Repr::Shared(ArcArray::from(data)),
        }
    }

    /// Wraps shared ndarray storage without copying.
    #[inline]
    pub fn from_shared(data: ArcArray<T, IxDyn>) -> Self {
        Tensor {
            repr: Repr::Shared(data),
        }
    }

    /// A tensor held inline, from its row-major elements: `data.len()` is the product of
    /// `shape`, and [`fits_inline`] holds.
    #[inline]
    pub(crate) fn inline(data: ArrayVec<T, INLINE>, shape: &[usize]) -> Self {
        debug_assert!(fits_inline(shape, data.len()), "inline: {shape:?}");
        debug_assert_eq!(data.len(), shape.iter().product::<usize>(), "inline");
        let mut dims = [0; INLINE_AXES];
        dims[..shape.len()].copy_from_slice(shape);
        Tensor {
            repr: Repr::Inline(Inline {
                dims,
                ndim: shape.len() as u8,
                data,
            }),
        }
    }

    /// The shape: one length per axis (empty for a 0-d tensor).
    #[inline]
    pub fn shape(&self) -> &[usize] {
        match &self.repr {
            Repr::Shared(a) => a.shape(),
            Repr::Inline(i) => i.shape(),
            Repr::Repeated(r) => r.shape.slice(),
            Repr::Padded(p) => p.shape().slice(),
        }
    }

    /// The number of axes.
    #[inline]
    pub fn ndim(&self) -> usize {
        match &self.repr {
            Repr::Shared(a) => a.ndim(),
            Repr::Inline(i) => i.ndim as usize,
            Repr::Repeated(r) => r.shape.ndim(),
            Repr::Padded(p) => p.shape().ndim(),
        }
    }

    /// The number of elements (1 for a 0-d tensor).
    #[inline]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Shared(a) => a.len(),
            Repr::Inline(i) => i.data.len(),
            Repr::Repeated(r) => r.shape.size(),
            Repr::Padded(p) => p.shape().size(),
        }
    }

    /// A read-only ndarray view of the data.
    #[inline]
    pub fn view(&self) -> ArrayViewD<'_, T> {
        match &self.repr {
            Repr::Shared(a) => a.view(),
            // Up to two axes through a static rank, as `from_parts` builds arrays.
            Repr::Inline(i) => match *i.shape() {
                [] => ArrayView0::from_shape((), &i.data).map(|v| v.into_dyn()),
                [n] => ArrayView1::from_shape(n, &i.data).map(|v| v.into_dyn()),
                [m, n] => ArrayView2::from_shape((m, n), &i.data).map(|v| v.into_dyn()),
                _ => ArrayViewD::from_shape(IxDyn(i.shape()), &i.data),
            }
            .expect("an inline tensor holds one element per element of its shape"),
            Repr::Repeated(r) => r
                .base
                .broadcast(r.shape.clone())
                .expect("a repeated tensor's base broadcasts to its shape"),
            Repr::Padded(p) => p.full().view(),
        }
    }

    /// The elements as one row-major slice, without copying, when they are stored that way
    /// (every tensor an op returns is); `None` otherwise.
    #[inline]
    pub fn as_slice(&self) -> Option<&[T]> {
        match &self.repr {
            Repr::Shared(a) => a.as_slice(),
            Repr::Inline(i) => Some(&i.data),
            Repr::Repeated(_) => None,
            Repr::Padded(p) => p.full().as_slice(),
        }
    }

    /// Whether the elements are stored in row-major order, without gaps (every tensor an op
    /// returns is; a transpose, a flip or a strided slice of a large tensor is not).
    #[inline]
    pub fn is_standard_layout(&self) -> bool {
        match &self.repr {
            Repr::Shared(a) => a.is_standard_layout(),
            Repr::Inline(_) | Repr::Padded(_) => true,
            Repr::Repeated(_) => false,
        }
    }

    /// The first element in logical order, if any.
    #[inline]
    pub(crate) fn first(&self) -> Option<&T> {
        match &self.repr {
            Repr::Shared(a) => a.first(),
            Repr::Inline(i) => i.data.first(),
            Repr::Repeated(r) => r.base.first().filter(|_| r.shape.size() > 0),
            Repr::Padded(p) => p.first(),
        }
    }

    /// The data in row-major order: a view when it is stored that way, a copy otherwise.
    pub fn standard_layout(&self) -> CowArray<'_, T, IxDyn>
    where
        T: Clone,
    {
        let view = self.view();
        if view.is_standard_layout() {
            CowArray::from(view)
        } else {
            // A row at a time (`copy::for_each_row`): ndarray's `as_standard_layout` walks a
            // strided view element by element over dynamic dimensions.
            let data = crate::copy::row_major_vec(view.clone());
            CowArray::from(
                ArrayD::from_shape_vec(view.raw_dim(), data).expect("one value an element"),
            )
        }
    }

    /// A read-only view of the data broadcast to `shape`, or `None` when its shape does not
    /// broadcast to it.
    pub(crate) fn broadcast_view(&self, shape: &[usize]) -> Option<ArrayViewD<'_, T>> {
        match &self.repr {
            Repr::Shared(a) => a.broadcast(IxDyn(shape)),
            Repr::Inline(i) => {
                let lead = shape.len().checked_sub(i.shape().len())?;
                let mut strides = IxDyn::zeros(shape.len());
                let mut step = 1;
                for (k, &d) in i.shape().iter().enumerate().rev() {
                    match d {
                        _ if d == shape[lead + k] => strides[lead + k] = step,
                        1 => strides[lead + k] = 0,
                        _ => return None,
                    }
                    step *= d;
                }
                if shape.contains(&0) {
                    // No elements to point at: the empty view of that shape.
                    return ArrayViewD::from_shape(IxDyn(shape), &i.data[..0]).ok();
                }
                // A read-only view may repeat elements (the zero strides of broadcast axes).
                ArrayViewD::from_shape(IxDyn(shape).strides(strides), &i.data).ok()
            }
            Repr::Repeated(r) => {
                let (base, own) = (&r.base, &r.shape);
                // The repeated tensor broadcasts to `shape` when its own shape does; then
                // the base does too, to the same elements.
                let lead = shape.len().checked_sub(own.ndim())?;
                let fits = own
                    .slice()
                    .iter()
                    .zip(&shape[lead..])
                    .all(|(&d, &s)| d == s || d == 1);
                if fits {
                    base.broadcast(IxDyn(shape))
                } else {
                    None
                }
            }
            Repr::Padded(p) => p.full().broadcast(IxDyn(shape)),
        }
    }

    /// `n` copies of this tensor along a new leading axis, sharing its elements (nothing is
    /// copied until the result is written to).
    pub(crate) fn repeated(&self, n: usize) -> Tensor<T>
    where
        T: Clone,
    {
        let shape = IxDyn(
            &core::iter::once(n)
                .chain(self.shape().iter().copied())
                .collect::<Vec<_>>(),
        );
        let base = match &self.repr {
            Repr::Repeated(r) => r.base.clone(),
            _ => self.to_shared(),
        };
        Tensor {
            repr: Repr::Repeated(Box::new(Repeated { base, shape })),
        }
    }

    /// Whether the tensor repeats one example along its leading axis (`repeated`): a check
    /// every op may make, so it costs a comparison.
    #[inline]
    pub(crate) fn is_repeated(&self) -> bool {
        matches!(self.repr, Repr::Repeated(_))
    }

    /// For a tensor that repeats one example along its leading axis (`repeated`), that
    /// example and the number of copies.
    pub(crate) fn repeated_parts(&self) -> Option<(Tensor<T>, usize)> {
        let Repr::Repeated(r) = &self.repr else {
            return None;
        };
        let example_shape = &r.shape.slice()[1..];
        let example = if r.base.shape() == example_shape {
            Tensor::from_shared(r.base.clone())
        } else {
            Tensor {
                repr: Repr::Repeated(Box::new(Repeated {
                    base: r.base.clone(),
                    shape: IxDyn(example_shape),
                })),
            }
        };
        Some((example, r.shape[0]))
    }

    /// Whether the tensor is held inline.
    #[inline]
    pub(crate) fn is_inline(&self) -> bool {
        matches!(self.repr, Repr::Inline(_))
    }

    /// Whether this tensor's storage is its own (no clone shares it), so that writing to it
    /// copies nothing.
    #[inline]
    pub(crate) fn is_unique(&self) -> bool {
        match &self.repr {
            Repr::Shared(a) => a.is_unique(),
            Repr::Inline(_) => true,
            Repr::Repeated(_) | Repr::Padded(_) => false,
        }
    }
}

impl<T: Clone> Tensor<T> {
    /// `op` of the one example this tensor repeats along its leading axis (`vmap`'s copies of
    /// a value), repeated as often: for an op that leaves the leading axis as it is (`keeps`),
    /// so that a batch of one value costs one example. `None` for any other tensor or op.
    pub(crate) fn per_example<E>(
        &self,
        keeps: bool,
        op: impl FnOnce(&Tensor<T>) -> Result<Tensor<T>, E>,
    ) -> Option<Result<Tensor<T>, E>> {
        let (example, n) = self.repeated_parts().filter(|_| keeps)?;
        Some(op(&example).map(|t| t.repeated(n)))
    }

    /// The data as shared ndarray storage: the tensor's own (a cheap clone) when it has one,
    /// a new array when the tensor is held inline.
    #[inline]
    pub fn to_shared(&self) -> ArcArray<T, IxDyn> {
        match &self.repr {
            Repr::Shared(a) => a.clone(),
            Repr::Inline(i) => {
                ArcArray::from_shape_vec(IxDyn(i.shape()), i.data.to_vec()).expect("inline")
            }
            Repr::Repeated(_) => self.view().to_owned().into_shared(),
            Repr::Padded(p) => p.full().clone(),
        }
    }

    /// Mutable access to the data as an ndarray array (copies it first when the storage is
    /// shared, and moves an inline tensor's elements to an array of their own).
    #[inline]
    pub(crate) fn data_mut(&mut self) -> &mut ArcArray<T, IxDyn> {
        match &self.repr {
            Repr::Shared(_) => {}
            // A new array of its own, which writing does not copy again.
            Repr::Padded(p) => self.repr = Repr::Shared(p.clone().owned()),
            _ => self.repr = Repr::Shared(self.to_shared()),
        }
        match &mut self.repr {
            Repr::Shared(a) => a,
            _ => unreachable!("moved to shared storage above"),
        }
    }

    /// The elements as one mutable row-major slice when they are stored that way and this
    /// tensor owns them: `None` when writing would first have to copy (shared storage, another
    /// layout).
    #[inline]
    pub(crate) fn unique_slice_mut(&mut self) -> Option<&mut [T]> {
        match &mut self.repr {
            Repr::Shared(a) if a.is_unique() && a.is_standard_layout() => a.as_slice_mut(),
            Repr::Shared(_) | Repr::Repeated(_) | Repr::Padded(_) => None,
            Repr::Inline(i) => Some(&mut i.data),
        }
    }
}

impl<T: PartialEq> PartialEq for Tensor<T> {
    /// Same shape and same elements, whatever the storage.
    fn eq(&self, other: &Self) -> bool {
        match (&self.repr, &other.repr) {
            (Repr::Shared(a), Repr::Shared(b)) => a == b,
            _ => self.shape() == other.shape() && self.view() == other.view(),
        }
    }
}

impl<T: Clone> Tensor<T> {
    /// A tensor of the given shape holding `data` in row-major order.
    ///
    /// # Panics
    /// When `data.len()` is not the product of `shape`.
    #[track_caller]
    pub fn from_vec(data: Vec<T>, shape: &[usize]) -> Self {
        Self::try_from_vec(data, shape).or_panic()
    }

    /// Like [`Tensor::from_vec`], returning an error on a size mismatch.
    pub fn try_from_vec(data: Vec<T>, shape: &[usize]) -> Result<Self, ShapeError> {
        let expected = checked_size::<T>("from_vec", shape, || {
            format!("{} elements for shape {shape:?}", data.len())
        })?;
        if data.len() != expected {
            return Err(ShapeError::new(
                "from_vec",
                format!(
                    "{} elements cannot fill shape {:?}, which holds {}",
                    data.len(),
                    shape,
                    expected
                ),
            ));
        }
        // The vector itself, not an inline copy: `into_vec` gives it back.
        Ok(Self::shared_from_parts(data, shape))
    }

    /// A tensor of `shape` holding `data` in row-major order, where the caller has made
    /// `data.len()` the product of `shape` (an op's result of its operand's shape): held inline
    /// when it is small enough.
    pub(crate) fn from_parts(data: Vec<T>, shape: &[usize]) -> Self {
        debug_assert_eq!(data.len(), shape.iter().product::<usize>(), "from_parts");
        if fits_inline(shape, data.len()) {
            return Self::inline(data.into_iter().collect(), shape);
        }
        Self::shared_from_parts(data, shape)
    }

    /// [`Tensor::from_parts`] in shared storage, whatever the size.
    ///
    /// Up to two axes, the array is built with a static rank and then given its dynamic one,
    /// which skips most of the checks and conversions of a dynamic-rank shape: on a tensor of
    /// 16 elements, building it cost several times the arithmetic of an op.
    fn shared_from_parts(data: Vec<T>, shape: &[usize]) -> Self {
        let array = match *shape {
            [] => Array0::from_shape_vec((), data).map(|a| a.into_dyn()),
            [n] => Array1::from_shape_vec(n, data).map(|a| a.into_dyn()),
            [m, n] => Array2::from_shape_vec((m, n), data).map(|a| a.into_dyn()),
            _ => ArrayD::from_shape_vec(IxDyn(shape), data),
        };
        Self::from_array(array.expect("from_parts: one element per element of the shape"))
    }

    /// A 0-d tensor holding `v`.
    pub fn scalar(v: T) -> Self {
        let mut data = ArrayVec::new();
        data.push(v);
        Self::inline(data, &[])
    }

    /// A tensor of the given shape with every element `v`.
    ///
    /// # Panics
    /// When `shape` holds more elements than a tensor can.
    #[track_caller]
    pub fn full(shape: &[usize], v: T) -> Self {
        Self::try_full(shape, v).or_panic()
    }

    /// Like [`Tensor::full`], returning an error when `shape` holds more elements than a tensor
    /// can.
    pub fn try_full(shape: &[usize], v: T) -> Result<Self, ShapeError> {
        checked_size::<T>("full", shape, || format!("shape {shape:?}"))?;
        Ok(Self::from_array(ArrayD::from_elem(IxDyn(shape), v)))
    }

    /// The elements in row-major order.
    pub fn to_vec(&self) -> Vec<T> {
        if let Some(s) = self.as_slice() {
            return s.to_vec();
        }
        // A strided view (a flip, a transpose), a row at a time.
        crate::copy::row_major_vec(self.view())
    }

    /// The only element of a one-element tensor.
    ///
    /// # Panics
    /// When the tensor does not have exactly one element.
    #[track_caller]
    pub fn item(&self) -> T {
        if self.len() != 1 {
            panic!(
                "item: the tensor has shape {:?} ({} elements); item needs exactly one",
                self.shape(),
                self.len()
            );
        }
        self.view().first().cloned().expect("one element")
    }

    /// An owned ndarray copy of the data.
    pub fn to_array(&self) -> ArrayD<T> {
        self.view().to_owned()
    }

    /// Applies `f` to every element. The result is row-major whatever `self`'s layout, as every
    /// elementwise op's is: a fused region writes its values in row-major order, and the same
    /// ops one by one must give the same tensor.
    pub fn map<U, F: FnMut(&T) -> U>(&self, f: F) -> Tensor<U> {
        if let Some(s) = self.as_slice() {
            if fits_inline(self.shape(), s.len()) {
                return Tensor::inline(s.iter().map(f).collect(), self.shape());
            }
            return Tensor::from_array(self.view().map(f));
        }
        // A strided view (`t`, `permute`, `flip`, a slice) mapped a row at a time into
        // row-major order (ndarray's `map` would keep the memory order of a view that is
        // contiguous in another).
        let mut f = f;
        let mut data = Vec::with_capacity(self.len());
        crate::copy::for_each_row(self.view(), |row| data.extend(row.iter().map(&mut f)));
        Tensor::from_array(
            ArrayD::from_shape_vec(IxDyn(self.shape()), data).expect("map: one value an element"),
        )
    }

    /// A row-major copy of the elements, a row at a time (for a transpose or a strided slice).
    fn standard_copy(&self) -> Tensor<T> {
        Tensor::from_parts(crate::copy::row_major_vec(self.view()), self.shape())
    }

    /// [`Tensor::map`] for the ops: row-major data goes through one loop compiled for the CPU's
    /// vector instructions ([`crate::vmath::vectorised`]), which LLVM vectorises when `f` is
    /// inlined into it (mark the closure `#[inline(always)]`).
    pub(crate) fn map_elems<U: Clone>(&self, f: impl Fn(&T) -> U) -> Tensor<U> {
        if let Some((example, n)) = self.repeated_parts() {
            return example.map_elems(f).repeated(n);
        }
        match self.as_slice() {
            // No more than an inline tensor holds: no loop worth vectorising.
            Some(s) if fits_inline(self.shape(), s.len()) => {
                Tensor::inline(s.iter().map(f).collect(), self.shape())
            }
            Some(s) if !s.is_empty() => {
                // Written once: `vec![v; n]` would fill (or zero) the buffer first, a pass as
                // long as the op's own.
                let mut out = Vec::with_capacity(s.len());
                crate::vmath::vectorised(
                    #[inline(always)]
                    || out.extend(s.iter().map(&f)),
                );
                Tensor::from_parts(out, self.shape())
            }
            // Empty.
            Some(_) => Tensor::from_parts(Vec::new(), self.shape()),
            // A strided view: copied out in row-major order, then the loop above.
            None => self.standard_copy().map_elems(f),
        }
    }

    /// `f` applied to the pairs of elements in the same position of `self` and `other`, which
    /// must have the same shape.
    ///
    /// Row-major operands (what nearly every op writes) go through their slices in one loop
    /// the compiler can vectorise (compiled as `map_elems`'s); others through `Zip`, whose set-up on dynamic-rank arrays
    /// costs more than the loop itself on tensors of a few dozen elements.
    ///
    /// The result is row-major whatever the operands' layouts, as every elementwise op's is: a
    /// fused region of `#[differentiable]` code writes its values (or sums them) in row-major
    /// order, and the same region op by op must give the same tensor, to the order in which a
    /// later `sum` adds it (`sum` adds a contiguous tensor in its memory order).
    pub(crate) fn zip_map<U, V: Clone>(
        &self,
        other: &Tensor<U>,
        f: impl Fn(&T, &U) -> V,
    ) -> Tensor<V> {
        debug_assert_eq!(self.shape(), other.shape(), "zip_map: shapes differ");
        if let (Some(a), Some(b)) = (self.as_slice(), other.as_slice()) {
            if fits_inline(self.shape(), a.len()) {
                let data = a.iter().zip(b).map(|(u, v)| f(u, v)).collect();
                return Tensor::inline(data, self.shape());
            }
            let mut out = Vec::with_capacity(a.len());
            crate::vmath::vectorised(
                #[inline(always)]
                || out.extend(a.iter().zip(b).map(|(u, v)| f(u, v))),
            );
            return Tensor::from_parts(out, self.shape());
        }
        Tensor::from_array(row_major(
            ndarray::Zip::from(&self.view())
                .and(&other.view())
                .map_collect(f),
        ))
    }
}

impl<T: Clone> Tensor<T> {
    /// [`Tensor::map_elems`] for a function of the kernels of a loop's pass ([`Kernels`]): each
    /// block of [`KERNEL_BLOCK`] elements runs with the fast kernels, and again with the
    /// full-range ones when one of them met an argument outside its range.
    pub(crate) fn map_elems_in<U: Clone>(&self, f: impl Fn(&T, &Kernels) -> U) -> Tensor<U> {
        if let Some((example, n)) = self.repeated_parts() {
            return example.map_elems_in(f).repeated(n);
        }
        match self.as_slice() {
            Some(s) if fits_inline(self.shape(), s.len()) => {
                let mut out = ArrayVec::new();
                fast_then_exact(|k| {
                    out.clear();
                    out.extend(s.iter().map(|x| f(x, k)));
                });
                Tensor::inline(out, self.shape())
            }
            Some(s) if !s.is_empty() => {
                let mut out = vec![f(&s[0], &Kernels::exact()); s.len()];
                crate::vmath::vectorised(
                    #[inline(always)]
                    || {
                        for (o, x) in out.chunks_mut(KERNEL_BLOCK).zip(s.chunks(KERNEL_BLOCK)) {
                            fast_then_exact(
                                #[inline(always)]
                                |k| {
                                    for (o, x) in o.iter_mut().zip(x) {
                                        *o = f(x, k);
                                    }
                                },
                            );
                        }
                    },
                );
                Tensor::from_parts(out, self.shape())
            }
            // Empty.
            Some(_) => Tensor::from_parts(Vec::new(), self.shape()),
            // A strided view: copied out in row-major order, then the loop above.
            None => self.standard_copy().map_elems_in(f),
        }
    }

    /// [`Tensor::zip_map`] for a function of the kernels of a loop's pass, in blocks as
    /// [`Tensor::map_elems_in`].
    pub(crate) fn zip_map_in<U, V: Clone>(
        &self,
        other: &Tensor<U>,
        f: impl Fn(&T, &U, &Kernels) -> V,
    ) -> Tensor<V> {
        debug_assert_eq!(self.shape(), other.shape(), "zip_map_in: shapes differ");
        if let (Some(a), Some(b)) = (self.as_slice(), other.as_slice()) {
            if fits_inline(self.shape(), a.len()) {
                let mut out = ArrayVec::new();
                fast_then_exact(|k| {
                    out.clear();
                    out.extend(a.iter().zip(b).map(|(u, v)| f(u, v, k)));
                });
                return Tensor::inline(out, self.shape());
            }
            let mut out = vec![f(&a[0], &b[0], &Kernels::exact()); a.len()];
            crate::vmath::vectorised(
                #[inline(always)]
                || {
                    let blocks = out.chunks_mut(KERNEL_BLOCK);
                    for ((o, u), v) in blocks
                        .zip(a.chunks(KERNEL_BLOCK))
                        .zip(b.chunks(KERNEL_BLOCK))
                    {
                        fast_then_exact(
                            #[inline(always)]
                            |k| {
                                for ((o, u), v) in o.iter_mut().zip(u).zip(v) {
                                    *o = f(u, v, k);
                                }
                            },
                        );
                    }
                },
            );
            return Tensor::from_parts(out, self.shape());
        }
        let exact = Kernels::exact();
        Tensor::from_array(row_major(
            ndarray::Zip::from(&self.view())
                .and(&other.view())
                .map_collect(|u, v| f(u, v, &exact)),
        ))
    }
}

/// An elementwise op's result in row-major order (see [`Tensor::zip_map`]): `Zip` writes
/// operands laid out column-major (`t`, `concat` along an inner axis) in their order. A copy
/// only then.
pub(crate) fn row_major<T: Clone>(a: ArrayD<T>) -> ArrayD<T> {
    if a.is_standard_layout() {
        a
    } else {
        a.as_standard_layout().into_owned()
    }
}

/// The elements [`Tensor::map_elems_in`] runs with one pass of the kernels.
const KERNEL_BLOCK: usize = 64;

impl<T: Clone + Zero> Tensor<T> {
    /// A tensor of zeros.
    ///
    /// # Panics
    /// When `shape` holds more elements than a tensor can.
    #[track_caller]
    pub fn zeros(shape: &[usize]) -> Self {
        Self::try_zeros(shape).or_panic()
    }

    /// Like [`Tensor::zeros`], returning an error when `shape` holds more elements than a
    /// tensor can.
    pub fn try_zeros(shape: &[usize]) -> Result<Self, ShapeError> {
        checked_size::<T>("zeros", shape, || format!("shape {shape:?}"))?;
        Ok(Self::from_array(ArrayD::zeros(IxDyn(shape))))
    }
}

impl<T: Clone + One> Tensor<T> {
    /// A tensor of ones.
    ///
    /// # Panics
    /// When `shape` holds more elements than a tensor can.
    #[track_caller]
    pub fn ones(shape: &[usize]) -> Self {
        Self::try_ones(shape).or_panic()
    }

    /// Like [`Tensor::ones`], returning an error when `shape` holds more elements than a tensor
    /// can.
    pub fn try_ones(shape: &[usize]) -> Result<Self, ShapeError> {
        checked_size::<T>("ones", shape, || format!("shape {shape:?}"))?;
        Ok(Self::from_array(ArrayD::ones(IxDyn(shape))))
    }
}

impl<T: fmt::Debug> fmt::Debug for Tensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tensor(shape={:?}, {:?})", self.shape(), self.view())
    }
}

impl<T: fmt::Display> fmt::Display for Tensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.view(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tensor_is_no_larger_than_its_shared_storage() {
        // Moves of a larger tensor cost calls to `memcpy` on every op's result: with sixteen
        // elements inline (168 bytes) W8 ran slower than with none.
        assert_eq!(
            std::mem::size_of::<Tensor<f64>>(),
            std::mem::size_of::<ArcArray<f64, IxDyn>>()
        );
        assert_eq!(
            std::mem::size_of::<Tensor<f32>>(),
            std::mem::size_of::<ArcArray<f32, IxDyn>>()
        );
    }

    #[test]
    fn from_parts_builds_the_array_from_vec_builds() {
        for shape in [
            &[][..],
            &[5],
            &[0],
            &[2, 3],
            &[3, 0],
            &[2, 1, 3],
            &[1, 2, 0, 2],
            &[2, 1, 2, 1, 2],
        ] {
            let n: usize = shape.iter().product();
            let data: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 1.0).collect();
            let fast = Tensor::from_parts(data.clone(), shape);
            let general = ArrayD::from_shape_vec(IxDyn(shape), data.clone()).expect("valid");
            assert_eq!(fast.shape(), shape);
            assert_eq!(fast.view().strides(), general.strides(), "{shape:?}");
            assert_eq!(fast.to_vec(), data);
            assert_eq!(fast.to_shared(), general.into_shared());
        }
    }
}
