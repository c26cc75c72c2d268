//! Functions of numbers at native speed: the runtime side of the code `#[differentiable]`
//! generates for a function whose differentiated values are all `f32`/`f64` numbers.
//!
//! Such a function (every differentiated parameter a number, a number returned, every op on
//! the way elementwise) is written with the same statements as any other, but its values are
//! the numbers themselves, not 0-d tensors: each op is a fused region of one or more ops whose
//! closure is called directly on the numbers ([`number_map`], [`number_jvp`],
//! [`number_vjp`]), adjoints are `Option<T>`, and what the backward pass reads from a loop is
//! kept on stacks of numbers. A shape saved for the backward pass is [`NumberShape`], which has
//! no size, so its stack never allocates. No tensor is made in either pass.
//!
//! The closures are the ones the fused loops run element by element (`crate::fused`), calling
//! the same scalar forms, so a function of numbers computes exactly what its tensor form does.
//! Each call runs the fast kernels first and, when one met an argument outside its range, the
//! full-range ones ([`fast_then_exact`]): a plain branch a number.
//!
//! Users do not call these; the macro reaches them through `rune_ad::__private`.

use std::marker::PhantomData;

use num_traits::Zero;

use crate::element::Element;
use crate::fused::FusedOps;
use crate::slots::{accumulate, NoTangent, TangentSlot};
use crate::tensor::Tensor;
use crate::vmath::{fast_then_exact, Kernels};

/// A number an op of a function of numbers reads: a differentiated value or a constant, read
/// as a `T`. (The type is a parameter, not an associated type, so that a literal constant takes
/// the type of the numbers it meets, as it does in the user's code.)
///
/// A constant that is a tensor (`x * t` with `t` a `#[nodiff]` tensor of one element) is read
/// as its one element; a function of numbers reaches such a product only through `.item()`,
/// which needs exactly one element too.
pub trait NumberOf<T> {
    /// The number.
    fn number_of(&self) -> T;
}

macro_rules! numbers {
    ($($t:ty)*) => {$(
        impl NumberOf<$t> for $t {
            #[inline(always)]
            fn number_of(&self) -> $t {
                *self
            }
        }
    )*};
}
numbers!(f32 f64);

impl<T, X: NumberOf<T> + ?Sized> NumberOf<T> for &X {
    #[inline(always)]
    fn number_of(&self) -> T {
        (**self).number_of()
    }
}

impl<T: Element> NumberOf<T> for Tensor<T> {
    #[track_caller]
    fn number_of(&self) -> T {
        if self.len() != 1 {
            panic!(
                "a tensor of shape {:?} is read as a number: in a function of numbers, an \
                 elementwise op of a differentiated number and a tensor needs a tensor of one \
                 element",
                self.shape()
            );
        }
        self.item()
    }
}

/// The number `x` is or holds.
#[inline(always)]
pub fn number_of<T, X: NumberOf<T> + ?Sized>(x: &X) -> T {
    x.number_of()
}

/// A number or a 0-d tensor as an `f64`, whichever holds a number of a function of numbers:
/// what `n as usize` of a differentiated number reads.
pub trait RealOf {
    /// The number, as an `f64` (exactly, from `f32` too).
    fn real_of(&self) -> f64;
}

impl<T: Element> RealOf for T {
    #[inline(always)]
    fn real_of(&self) -> f64 {
        self.to_real()
    }
}

impl<T: Element> RealOf for Tensor<T> {
    #[inline]
    fn real_of(&self) -> f64 {
        self.item().to_real()
    }
}

/// [`RealOf`] as a function.
#[inline(always)]
pub fn real_of<X: RealOf + ?Sized>(x: &X) -> f64 {
    x.real_of()
}

/// A constant tensor input of an op in a function of numbers held as 0-d tensors
/// (`x.hypot(1.0)` under `fuse = false`): a number as a 0-d tensor of the element type, a
/// tensor as it is.
pub trait NumberTensor<T> {
    /// The tensor.
    fn number_tensor(self) -> Tensor<T>;
}

impl<T: Element> NumberTensor<T> for f64 {
    #[inline]
    fn number_tensor(self) -> Tensor<T> {
        Tensor::scalar(T::from_f64(self))
    }
}

impl<T: Element> NumberTensor<T> for f32 {
    #[inline]
    fn number_tensor(self) -> Tensor<T> {
        Tensor::scalar(T::from_f64(f64::from(self)))
    }
}

impl<T> NumberTensor<T> for Tensor<T> {
    #[inline]
    fn number_tensor(self) -> Tensor<T> {
        self
    }
}

impl<T: Element> NumberTensor<T> for &Tensor<T> {
    #[inline]
    fn number_tensor(self) -> Tensor<T> {
        self.clone()
    }
}

/// [`NumberTensor`] as a function.
#[inline]
pub fn number_tensor<T, X: NumberTensor<T>>(x: X) -> Tensor<T> {
    x.number_tensor()
}

/// The shape of a number, saved for the backward pass: nothing but its type.
#[derive(Debug)]
pub struct NumberShape<T>(PhantomData<T>);

impl<T> Clone for NumberShape<T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for NumberShape<T> {}

/// The shape of number `x`.
#[inline(always)]
pub fn number_shape<T: Element>(_x: &T) -> NumberShape<T> {
    NumberShape(PhantomData)
}

/// Zero, for an input of a region whose value the backward pass does not read.
#[inline(always)]
pub fn number_zero<T: Element>(_shape: &NumberShape<T>) -> T {
    T::zero()
}

/// A region's value: `f` applied to the numbers (`crate::fused::fused_map` on numbers).
#[inline(always)]
pub fn number_map<T: Element, const N: usize, const L: usize>(
    _ops: FusedOps,
    inputs: [T; N],
    literals: [f64; L],
    f: impl Fn([T; N], &[T; L], &Kernels) -> T,
) -> T {
    let literals = literals.map(T::from_f64);
    fast_then_exact(
        #[inline(always)]
        |k| f(inputs, &literals, k),
    )
}

/// A region's value and tangent (`crate::fused::fused_jvp` on numbers).
#[inline(always)]
pub fn number_jvp<T: Element, const N: usize, const L: usize, const K: usize>(
    _ops: FusedOps,
    inputs: [T; N],
    literals: [f64; L],
    tangents: [&T; K],
    f: impl Fn([T; N], &[T; L], &Kernels, [T; K]) -> (T, T),
) -> (T, T) {
    let (literals, tangents) = (literals.map(T::from_f64), tangents.map(|t| *t));
    fast_then_exact(
        #[inline(always)]
        |k| f(inputs, &literals, k, tangents),
    )
}

/// The cotangents of a region's inputs from its value's cotangent `g`
/// (`crate::fused::fused_vjp` on numbers): `(input, k)` of `targets` says that input's is
/// result `k` of `f`.
#[inline(always)]
pub fn number_vjp<T: Element, const N: usize, const L: usize, const K: usize, const M: usize>(
    _ops: FusedOps,
    inputs: [T; N],
    literals: [f64; L],
    targets: [(usize, usize); M],
    g: &T,
    f: impl Fn([T; N], &[T; L], &Kernels, T) -> [T; K],
) -> [T; M] {
    let literals = literals.map(T::from_f64);
    let d = fast_then_exact(
        #[inline(always)]
        |k| f(inputs, &literals, k, *g),
    );
    targets.map(|(_, k)| d[k])
}

/// Adds a contribution to an adjoint (`None` stands for zero).
#[inline(always)]
pub fn accumulate_number<T: Element>(adjoint: &mut Option<T>, contribution: T) {
    *adjoint = Some(match *adjoint {
        Some(a) => a + contribution,
        None => contribution,
    });
}

/// Adds an optional contribution to an adjoint.
#[inline(always)]
pub fn accumulate_number_option<T: Element>(adjoint: &mut Option<T>, contribution: Option<T>) {
    if let Some(c) = contribution {
        accumulate_number(adjoint, c);
    }
}

/// An adjoint, or zero where nothing reached it: a parameter's gradient.
#[inline(always)]
pub fn number_or_zero<T: Element>(adjoint: Option<T>, _shape: &NumberShape<T>) -> T {
    adjoint.unwrap_or_else(T::zero)
}

/// The tangent a caller passed for a number parameter: the number, or zero for
/// [`NoTangent`].
#[inline(always)]
pub fn number_tangent<T: Element, S: TangentSlot<T>>(slot: S, _primal: &T) -> T {
    slot.number_tangent()
}

/// An array parameter (`[f64; N]`, `&[f32; N]`) or a list parameter (`&[f64]`, `Vec<f32>`, which
/// enter as a `Vec`) of a function returning a number: its elements are differentiated numbers,
/// read by index; its gradient and tangents are of the same type and length. Inside, the list's
/// elements are the numbers (a function of numbers) or 0-d tensors (a function written on
/// tensors), and the backward pass adds its elements' adjoints into a list of `Option`s
/// ([`NumberArray::Adjoints`]), which for an array does not allocate.
pub trait NumberArray: Clone {
    /// The element type.
    type Elem: Element;
    /// One optional adjoint an element.
    type Adjoints<U>: AdjointList<U>;
    /// The elements, in order.
    fn elements(&self) -> &[Self::Elem];
    /// The list of `f(0), f(1), ..` of `len` elements (an array's own length).
    fn from_elements(len: usize, f: impl FnMut(usize) -> Self::Elem) -> Self;
    /// No adjoint yet for any of `len` elements.
    fn adjoints<U>(len: usize) -> Self::Adjoints<U>;
}

impl<T: Element, const N: usize> NumberArray for [T; N] {
    type Elem = T;
    type Adjoints<U> = [Option<U>; N];
    #[inline(always)]
    fn elements(&self) -> &[T] {
        self
    }
    #[inline(always)]
    fn from_elements(_len: usize, f: impl FnMut(usize) -> T) -> Self {
        std::array::from_fn(f)
    }
    #[inline(always)]
    fn adjoints<U>(_len: usize) -> [Option<U>; N] {
        std::array::from_fn(|_| None)
    }
}

impl<T: Element> NumberArray for Vec<T> {
    type Elem = T;
    type Adjoints<U> = Vec<Option<U>>;
    #[inline(always)]
    fn elements(&self) -> &[T] {
        self
    }
    fn from_elements(len: usize, f: impl FnMut(usize) -> T) -> Self {
        (0..len).map(f).collect()
    }
    fn adjoints<U>(len: usize) -> Vec<Option<U>> {
        (0..len).map(|_| None).collect()
    }
}

/// The number of elements of an array or list parameter, which its gradient has too.
#[inline(always)]
pub fn array_len<A: NumberArray>(x: &A) -> usize {
    x.elements().len()
}

/// The adjoints of a list's elements: a `Vec` that grows to the index asked for (a local
/// `Vec` of tensors), or an array (an array parameter).
pub trait AdjointList<U> {
    /// The adjoint of element `index`.
    fn slot(&mut self, index: usize) -> &mut Option<U>;
}

impl<U> AdjointList<U> for Vec<Option<U>> {
    #[inline]
    fn slot(&mut self, index: usize) -> &mut Option<U> {
        if self.len() <= index {
            self.resize_with(index + 1, || None);
        }
        &mut self[index]
    }
}

impl<U, const N: usize> AdjointList<U> for [Option<U>; N] {
    #[inline(always)]
    fn slot(&mut self, index: usize) -> &mut Option<U> {
        &mut self[index]
    }
}

/// An array parameter's elements as the 0-d tensors a function written on tensors reads.
pub fn array_param<A: NumberArray>(x: &A) -> Vec<Tensor<A::Elem>> {
    x.elements().iter().map(|&e| Tensor::scalar(e)).collect()
}

/// A local array of numbers (0-d tensors), as constant code reads it (`t.iter().filter(..)`).
pub fn list_numbers<T: Element>(list: &[Tensor<T>]) -> Vec<T> {
    list.iter().map(Tensor::item).collect()
}

/// A local list of numbers (0-d tensors) as the array a callee takes (`f([x, y, z])`).
pub fn list_number_array<A: NumberArray>(list: &[Tensor<A::Elem>]) -> A {
    A::from_elements(list.len(), |i| list[i].item())
}

/// An array parameter's elements as the numbers a function of numbers reads.
#[inline(always)]
pub fn number_array_param<A: NumberArray>(x: &A) -> A {
    x.clone()
}

/// The gradient of an array parameter of `len` elements from its elements' adjoints (zero where
/// none reached).
pub fn array_grad<A: NumberArray>(mut adjoints: A::Adjoints<Tensor<A::Elem>>, len: usize) -> A {
    A::from_elements(len, |i| {
        adjoints
            .slot(i)
            .take()
            .map_or_else(A::Elem::zero, |t| t.item())
    })
}

/// [`array_grad`] in a function of numbers.
#[inline(always)]
pub fn number_array_grad<A: NumberArray>(mut adjoints: A::Adjoints<A::Elem>, len: usize) -> A {
    A::from_elements(len, |i| {
        adjoints.slot(i).take().unwrap_or_else(A::Elem::zero)
    })
}

/// Adds the gradient of an array a callee returned into the adjoints of the caller's array
/// parameter that was passed to it.
pub fn accumulate_array_slot<A: NumberArray>(
    adjoints: &mut impl AdjointList<Tensor<A::Elem>>,
    grad: A,
) {
    for (i, &g) in grad.elements().iter().enumerate() {
        accumulate(adjoints.slot(i), Tensor::scalar(g));
    }
}

/// [`accumulate_array_slot`] in a function of numbers.
#[inline(always)]
pub fn accumulate_number_array_slot<A: NumberArray>(
    adjoints: &mut impl AdjointList<A::Elem>,
    grad: A,
) {
    for (i, &g) in grad.elements().iter().enumerate() {
        accumulate_number(adjoints.slot(i), g);
    }
}

/// A tangent passed to an array or list parameter: one of the same type, a slice for a list, or
/// [`NoTangent`] (zeros).
pub trait ArrayTangentSlot<A: NumberArray> {
    /// The tangent at `primal`.
    ///
    /// # Panics
    /// When a list's tangent has another length than the list.
    fn array_tangent(self, primal: &A) -> A;
}

impl<A: NumberArray> ArrayTangentSlot<A> for &A {
    #[inline(always)]
    #[track_caller]
    fn array_tangent(self, primal: &A) -> A {
        same_length(self.elements(), primal);
        self.clone()
    }
}

impl<T: Element> ArrayTangentSlot<Vec<T>> for &[T] {
    #[track_caller]
    fn array_tangent(self, primal: &Vec<T>) -> Vec<T> {
        same_length(self, primal);
        self.to_vec()
    }
}

impl<A: NumberArray> ArrayTangentSlot<A> for NoTangent {
    #[inline(always)]
    fn array_tangent(self, primal: &A) -> A {
        A::from_elements(array_len(primal), |_| A::Elem::zero())
    }
}

/// Panics unless a list parameter's tangent has the list's length.
#[inline(always)]
#[track_caller]
fn same_length<A: NumberArray>(tangent: &[A::Elem], primal: &A) {
    assert!(
        tangent.len() == array_len(primal),
        "rune-ad: a tangent of {} elements for a list parameter of {} elements (jvp takes a \
         tangent of the parameter's length)",
        tangent.len(),
        array_len(primal)
    );
}

/// An array parameter's tangent as the 0-d tensors of its elements.
#[track_caller]
pub fn array_tangent<A: NumberArray, S: ArrayTangentSlot<A>>(
    slot: S,
    primal: &A,
) -> Vec<Tensor<A::Elem>> {
    array_param(&slot.array_tangent(primal))
}

/// The tangent of an array or list passed whole to a callee, from its elements' 0-d tensors:
/// the callee's parameter type decides whether it becomes an array or a `Vec`.
pub fn array_tangent_arg<T: Element>(tangents: &[Tensor<T>]) -> ListTangent<T> {
    ListTangent(tangents.iter().map(Tensor::item).collect())
}

/// The tangent of an array or list a caller passes whole to a callee ([`array_tangent_arg`]).
#[derive(Debug)]
pub struct ListTangent<T>(Vec<T>);

impl<A: NumberArray> ArrayTangentSlot<A> for &ListTangent<A::Elem> {
    #[track_caller]
    fn array_tangent(self, primal: &A) -> A {
        same_length(&self.0, primal);
        A::from_elements(self.0.len(), |i| self.0[i])
    }
}

/// [`array_tangent_arg`] in a function of numbers: the tangent array itself.
#[inline(always)]
pub fn number_array_tangent_arg<A: NumberArray>(tangents: &A) -> A {
    tangents.clone()
}

/// An array parameter's tangent in a function of numbers.
#[inline(always)]
#[track_caller]
pub fn number_array_tangent<A: NumberArray, S: ArrayTangentSlot<A>>(slot: S, primal: &A) -> A {
    slot.array_tangent(primal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_of_numbers_runs_its_closure_on_them() {
        let y = number_map("mul 0 1", [3.0f64, 4.0], [0.5], |[a, b], [l], _| a * b + l);
        assert_eq!(y, 12.5);
        let (y, t) = number_jvp(
            "mul 0 1",
            [3.0f64, 4.0],
            [],
            [&1.0, &2.0],
            |[a, b], _, _, [u, v]| (a * b, u * b + v * a),
        );
        assert_eq!((y, t), (12.0, 10.0));
        // Inputs 0 and 1 share result 0; input 2 reads result 1.
        let d = number_vjp(
            "add 0 1;mul 3 2",
            [1.0f64, 2.0, 5.0],
            [],
            [(0, 0), (1, 0), (2, 1)],
            &2.0,
            |[a, b, c], _, _, g| [g * c, g * (a + b)],
        );
        assert_eq!(d, [10.0, 10.0, 6.0]);
    }

    #[test]
    fn adjoints_of_numbers_add_up_from_none() {
        let mut a = None;
        accumulate_number_option(&mut a, None);
        assert_eq!(a, None);
        assert_eq!(number_or_zero(a, &number_shape(&1.0f32)), 0.0);
        accumulate_number(&mut a, 1.5f32);
        accumulate_number_option(&mut a, Some(2.0));
        assert_eq!(number_or_zero(a, &number_shape(&1.0f32)), 3.5);
        assert_eq!(std::mem::size_of::<NumberShape<f64>>(), 0);
    }

    #[test]
    fn a_tensor_of_one_element_is_a_number() {
        let x: f64 = number_of(&&Tensor::from_vec(vec![2.5f64], &[1, 1]));
        assert_eq!(x, 2.5);
        // A literal takes the type asked for.
        let y: f32 = number_of(&7.0);
        assert_eq!(y, 7.0);
        let zero: f64 = number_tangent(NoTangent, &1.0);
        assert_eq!((zero, number_tangent(&3.0f64, &1.0)), (0.0, 3.0));
    }

    #[test]
    #[should_panic(expected = "a tensor of shape [3] is read as a number")]
    fn a_tensor_of_three_elements_is_not_a_number() {
        let _: f64 = number_of(&Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3]));
    }
}
