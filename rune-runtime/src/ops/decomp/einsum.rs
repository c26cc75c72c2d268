//! `einsum` of two tensors: a contraction written in Einstein notation, `"ij,jk->ik"`.
//!
//! # The spec
//!
//! `"<a>,<b>->out"`: one letter (`a`–`z`, `A`–`Z`) per axis of each operand and of the output;
//! spaces are ignored. A letter in both operands with the same size pairs their axes; a letter
//! missing from the output is summed over. Without `->` the output is the letters that appear
//! once, in alphabetical order (NumPy's implicit mode). So `"ij,jk->ik"` is the matrix product,
//! `"bij,bjk->bik"` a batched one, `"i,i->"` the inner product, `"ij,ij->"` the Frobenius inner
//! product, `"i,j->ij"` the outer product, `"ij,j->i"` a matrix-vector product and `"ij,kj->ik"`
//! `A Bᵀ`. Not supported (each an error naming the op and the spec): a letter repeated within
//! one operand or in the output (diagonals), an output letter that no operand has, `...`
//! ellipses, and broadcasting: a letter's sizes must agree.
//!
//! # The kernel
//!
//! The letters only one operand has and the output lacks are summed first; the operands are then
//! permuted and reshaped to a batch of matrices (the letters shared with the output, the free
//! ones of each, the contracted ones) and multiplied by `matmul`, whose `f32` and `f64` kernels
//! are the fast ones.
//!
//! # Rules
//!
//! The op is bilinear: the JVP is `einsum(spec, dA, B) + einsum(spec, A, dB)`, and the VJP for
//! `A` is the contraction of the cotangent with `B` onto `A`'s subscripts (`"ik,jk->ij"` for
//! `"ij,jk->ik"`), broadcast over the letters that only `A` has.

use std::collections::BTreeMap;

use crate::element::Element;
use crate::error::{panicking_twin, OrPanic, ShapeError};
use crate::tensor::Tensor;

/// A parsed spec: the letters of each operand and of the output, and each letter's size.
struct Spec {
    a: Vec<char>,
    b: Vec<char>,
    out: Vec<char>,
    sizes: BTreeMap<char, usize>,
}

fn spec_error(spec: &str, what: impl std::fmt::Display) -> ShapeError {
    ShapeError::new("einsum", format!("spec {spec:?}: {what}"))
}

/// The letters of one term, each once.
fn letters(spec: &str, term: &str, what: &str) -> Result<Vec<char>, ShapeError> {
    let mut out = Vec::new();
    for c in term.chars() {
        if !c.is_ascii_alphabetic() {
            return Err(spec_error(
                spec,
                format!(
                    "{what} has {c:?}; subscripts are letters (no `...` ellipses), as in \
                     \"ij,jk->ik\""
                ),
            ));
        }
        if out.contains(&c) {
            return Err(spec_error(
                spec,
                format!("{what} repeats {c:?} (diagonals are not supported)"),
            ));
        }
        out.push(c);
    }
    Ok(out)
}

impl Spec {
    fn parse(spec: &str, a: &[usize], b: &[usize]) -> Result<Spec, ShapeError> {
        let compact: String = spec.chars().filter(|c| !c.is_whitespace()).collect();
        let (inputs, out) = match compact.split_once("->") {
            Some((i, o)) => (i, Some(o)),
            None => (compact.as_str(), None),
        };
        let Some((ta, tb)) = inputs.split_once(',') else {
            return Err(spec_error(
                spec,
                "expects two operands' subscripts separated by a comma, as in \"ij,jk->ik\"",
            ));
        };
        let (la, lb) = (
            letters(spec, ta, "the first operand")?,
            letters(spec, tb, "the second operand")?,
        );
        let mut sizes = BTreeMap::new();
        for (which, l, shape) in [("first", &la, a), ("second", &lb, b)] {
            if l.len() != shape.len() {
                return Err(spec_error(
                    spec,
                    format!(
                        "the {which} operand has {} subscripts but shape {shape:?}",
                        l.len()
                    ),
                ));
            }
            for (&c, &n) in l.iter().zip(shape) {
                if let Some(&m) = sizes.get(&c) {
                    if m != n {
                        return Err(spec_error(
                            spec,
                            format!(
                                "{c:?} is {m} in one operand and {n} in the other (shapes {a:?} \
                                 and {b:?})"
                            ),
                        ));
                    }
                }
                sizes.insert(c, n);
            }
        }
        let out = match out {
            Some(o) => {
                let lo = letters(spec, o, "the output")?;
                if let Some(c) = lo.iter().find(|c| !sizes.contains_key(c)) {
                    return Err(spec_error(
                        spec,
                        format!("the output's {c:?} is in neither operand"),
                    ));
                }
                lo
            }
            None => sizes
                .keys()
                .copied()
                .filter(|c| la.contains(c) != lb.contains(c))
                .collect(),
        };
        Ok(Spec {
            a: la,
            b: lb,
            out,
            sizes,
        })
    }
}

/// The positions of `subset`'s letters in `letters`.
fn positions(letters: &[char], subset: &[char]) -> Vec<usize> {
    subset
        .iter()
        .map(|c| {
            letters
                .iter()
                .position(|l| l == c)
                .expect("a letter of the term")
        })
        .collect()
}

/// `x` (subscripts `lx`) with the letters that are in neither `other` nor `out` summed over.
fn sum_private<T: Element>(
    x: &Tensor<T>,
    lx: &[char],
    other: &[char],
    out: &[char],
) -> (Tensor<T>, Vec<char>) {
    let (kept, summed): (Vec<usize>, Vec<usize>) =
        (0..lx.len()).partition(|&i| other.contains(&lx[i]) || out.contains(&lx[i]));
    if summed.is_empty() {
        return (x.clone(), lx.to_vec());
    }
    let axes: Vec<isize> = summed.iter().map(|&i| i as isize).collect();
    (
        x.sum_axes(&axes, false),
        kept.iter().map(|&i| lx[i]).collect(),
    )
}

/// The contraction of `a` (`la`) and `b` (`lb`) onto the letters `lo`, whose sizes are `sizes`;
/// an output letter in neither operand is broadcast.
fn contract<T: Element>(
    a: &Tensor<T>,
    la: &[char],
    b: &Tensor<T>,
    lb: &[char],
    lo: &[char],
    sizes: &BTreeMap<char, usize>,
) -> Tensor<T> {
    let (a, la) = sum_private(a, la, lb, lo);
    let (b, lb) = sum_private(b, lb, &la, lo);
    let shared: Vec<char> = lo
        .iter()
        .copied()
        .filter(|c| la.contains(c) && lb.contains(c))
        .collect();
    let contracted: Vec<char> = la
        .iter()
        .copied()
        .filter(|c| lb.contains(c) && !lo.contains(c))
        .collect();
    let free_a: Vec<char> = la.iter().copied().filter(|c| !lb.contains(c)).collect();
    let free_b: Vec<char> = lb.iter().copied().filter(|c| !la.contains(c)).collect();
    let size = |l: &[char]| -> usize { l.iter().map(|c| sizes[c]).product() };
    let (nb, m, k, n) = (
        size(&shared),
        size(&free_a),
        size(&contracted),
        size(&free_b),
    );
    let order_a = [&shared[..], &free_a, &contracted].concat();
    let order_b = [&shared[..], &contracted, &free_b].concat();
    let a3 = a.permute(&positions(&la, &order_a)).reshape(&[nb, m, k]);
    let b3 = b.permute(&positions(&lb, &order_b)).reshape(&[nb, k, n]);
    let letters = [&shared[..], &free_a, &free_b].concat();
    let dims: Vec<usize> = letters.iter().map(|c| sizes[c]).collect();
    let product = a3.matmul(&b3).reshape(&dims);
    // To the output's order, with the letters no operand has broadcast.
    let present: Vec<char> = lo.iter().copied().filter(|c| letters.contains(c)).collect();
    let mut y = product.permute(&positions(&letters, &present));
    if present.len() < lo.len() {
        let mut with_ones: Vec<usize> = Vec::with_capacity(lo.len());
        for c in lo {
            with_ones.push(if present.contains(c) { sizes[c] } else { 1 });
        }
        let full: Vec<usize> = lo.iter().map(|c| sizes[c]).collect();
        y = y.reshape(&with_ones).broadcast_to(&full);
    }
    y
}

panicking_twin! {
    /// The contraction of `a` and `b` written in Einstein notation, `"ij,jk->ik"` (see the module
    /// docs for the spec): NumPy's, JAX's and PyTorch's `einsum` with two operands.
    ///
    /// ```
    /// use rune_runtime::{einsum, Tensor};
    /// let a = Tensor::from_vec(vec![1.0, 2.0, 3.0, 4.0], &[2, 2]);
    /// let b = Tensor::from_vec(vec![5.0, 6.0, 7.0, 8.0], &[2, 2]);
    /// assert_eq!(einsum("ij,jk->ik", &a, &b).to_vec(), a.matmul(&b).to_vec());
    /// assert_eq!(einsum("ij,ij->", &a, &b).item(), 70.0);
    /// ```
    ///
    /// # Panics
    /// When the spec is malformed or does not fit the shapes.
    pub fn einsum<T: Element>(spec: &str, a: &Tensor<T>, b: &Tensor<T>) -> Tensor<T> => try_einsum
}

/// Like [`einsum`], returning an error naming the spec and the shapes when the spec is malformed
/// or does not fit them.
pub fn try_einsum<T: Element>(
    spec: &str,
    a: &Tensor<T>,
    b: &Tensor<T>,
) -> Result<Tensor<T>, ShapeError> {
    let s = Spec::parse(spec, a.shape(), b.shape())?;
    Ok(contract(a, &s.a, b, &s.b, &s.out, &s.sizes))
}

/// Rules of [`einsum`].
pub mod rules {
    use super::*;

    /// JVP of [`einsum`], from both operands and their tangents: `einsum(spec, dA, B) +
    /// einsum(spec, A, dB)`.
    #[track_caller]
    #[must_use]
    pub fn einsum_jvp<T: Element>(
        a: &Tensor<T>,
        b: &Tensor<T>,
        spec: &str,
        da: Option<&Tensor<T>>,
        db: Option<&Tensor<T>>,
    ) -> Tensor<T> {
        let ta = da.map(|d| einsum(spec, d, b));
        let tb = db.map(|d| einsum(spec, a, d));
        match (ta, tb) {
            (Some(x), Some(y)) => x + y,
            (Some(t), None) | (None, Some(t)) => t,
            (None, None) => {
                let s = Spec::parse(spec, a.shape(), b.shape()).or_panic();
                let shape: Vec<usize> = s.out.iter().map(|c| s.sizes[c]).collect();
                Tensor::zeros(&shape)
            }
        }
    }

    /// VJP of [`einsum`] for the first operand, from its shape and the second: the cotangent
    /// contracted with `B` onto `A`'s subscripts.
    #[track_caller]
    #[must_use]
    pub fn einsum_vjp_lhs<T: Element>(
        g: &Tensor<T>,
        a_shape: &[usize],
        b: &Tensor<T>,
        spec: &str,
    ) -> Tensor<T> {
        let s = Spec::parse(spec, a_shape, b.shape()).or_panic();
        contract(g, &s.out, b, &s.b, &s.a, &s.sizes)
    }

    /// VJP of [`einsum`] for the second operand, from the first and its shape: `A` contracted
    /// with the cotangent onto `B`'s subscripts.
    #[track_caller]
    #[must_use]
    pub fn einsum_vjp_rhs<T: Element>(
        g: &Tensor<T>,
        a: &Tensor<T>,
        b_shape: &[usize],
        spec: &str,
    ) -> Tensor<T> {
        let s = Spec::parse(spec, a.shape(), b_shape).or_panic();
        contract(a, &s.a, g, &s.out, &s.b, &s.sizes)
    }
}
