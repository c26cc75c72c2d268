//! Gradient checking: central finite differences against a function's JVP and VJP, and the
//! dot-product test between the two, as `jax.test_util.check_grads` does.

use std::fmt;

use crate::element::Element;
use crate::tensor::Tensor;

/// A function of tensors together with its forward- and reverse-mode derivatives.
///
/// Build one from three closures with [`grad_fn`].
pub trait GradFn<T: Element> {
    /// The function's value at `args`.
    fn value(&self, args: &[Tensor<T>]) -> Tensor<T>;
    /// The directional derivative at `args` along `tangents` (one per argument).
    fn jvp(&self, args: &[Tensor<T>], tangents: &[Tensor<T>]) -> Tensor<T>;
    /// The cotangent pulled back to each argument.
    fn vjp(&self, args: &[Tensor<T>], cotangent: &Tensor<T>) -> Vec<Tensor<T>>;
}

/// A [`GradFn`] made of three closures.
pub struct ClosureGradFn<F, J, V> {
    value: F,
    jvp: J,
    vjp: V,
}

/// Bundles a function with its JVP and VJP for [`check_grad`].
///
/// ```
/// use rune_runtime::{check_grad, grad_fn, Tensor};
/// let f = grad_fn(
///     |a: &[Tensor<f64>]| a[0].exp(),
///     |a: &[Tensor<f64>], t: &[Tensor<f64>]| &t[0] * &a[0].exp(),
///     |a: &[Tensor<f64>], g: &Tensor<f64>| vec![g * &a[0].exp()],
/// );
/// check_grad(&f, &[Tensor::from_vec(vec![0.5, -1.0], &[2])], 1e-5, 1e-6, 1e-6).unwrap();
/// ```
pub fn grad_fn<T, F, J, V>(value: F, jvp: J, vjp: V) -> ClosureGradFn<F, J, V>
where
    T: Element,
    F: Fn(&[Tensor<T>]) -> Tensor<T>,
    J: Fn(&[Tensor<T>], &[Tensor<T>]) -> Tensor<T>,
    V: Fn(&[Tensor<T>], &Tensor<T>) -> Vec<Tensor<T>>,
{
    ClosureGradFn { value, jvp, vjp }
}

impl<T, F, J, V> GradFn<T> for ClosureGradFn<F, J, V>
where
    T: Element,
    F: Fn(&[Tensor<T>]) -> Tensor<T>,
    J: Fn(&[Tensor<T>], &[Tensor<T>]) -> Tensor<T>,
    V: Fn(&[Tensor<T>], &Tensor<T>) -> Vec<Tensor<T>>,
{
    fn value(&self, args: &[Tensor<T>]) -> Tensor<T> {
        (self.value)(args)
    }
    fn jvp(&self, args: &[Tensor<T>], tangents: &[Tensor<T>]) -> Tensor<T> {
        (self.jvp)(args, tangents)
    }
    fn vjp(&self, args: &[Tensor<T>], cotangent: &Tensor<T>) -> Vec<Tensor<T>> {
        (self.vjp)(args, cotangent)
    }
}

/// Why a gradient check failed.
#[derive(Clone, Debug, PartialEq)]
pub enum GradCheckError {
    /// A derivative came back with the wrong shape.
    Shape {
        /// `"jvp"` or `"vjp"`.
        which: &'static str,
        /// The argument (for `vjp`) or output (for `jvp`, `0`) concerned.
        index: usize,
        /// The shape expected.
        expected: Vec<usize>,
        /// The shape returned.
        found: Vec<usize>,
    },
    /// The JVP disagrees with central finite differences.
    Jvp {
        /// Flat index of the worst element.
        at: usize,
        /// The JVP's value there.
        jvp: f64,
        /// The finite-difference estimate there.
        finite_difference: f64,
    },
    /// ⟨JVP(v), w⟩ ≠ ⟨v, VJP(w)⟩.
    DotProduct {
        /// ⟨JVP(v), w⟩.
        jvp_side: f64,
        /// ⟨v, VJP(w)⟩.
        vjp_side: f64,
    },
}

impl fmt::Display for GradCheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GradCheckError::Shape {
                which,
                index,
                expected,
                found,
            } => write!(
                f,
                "{which} result {index} has shape {found:?}, expected {expected:?}"
            ),
            GradCheckError::Jvp {
                at,
                jvp,
                finite_difference,
            } => write!(
                f,
                "JVP disagrees with central finite differences at element {at}: {jvp} vs {finite_difference}"
            ),
            GradCheckError::DotProduct { jvp_side, vjp_side } => write!(
                f,
                "dot-product test failed: <JVP(v), w> = {jvp_side} but <v, VJP(w)> = {vjp_side}"
            ),
        }
    }
}

impl std::error::Error for GradCheckError {}

fn close(a: f64, b: f64, rtol: f64, atol: f64) -> bool {
    (a - b).abs() <= atol + rtol * a.abs().max(b.abs())
}

fn dot<T: Element>(a: &Tensor<T>, b: &Tensor<T>) -> f64 {
    a.as_shared()
        .iter()
        .zip(b.as_shared().iter())
        .map(|(x, y)| x.to_real() * y.to_real())
        .sum()
}

/// Checks `f`'s JVP against central finite differences along a random direction, and its VJP
/// against its JVP by the dot-product test ⟨JVP(v), w⟩ = ⟨v, VJP(w)⟩ with a random cotangent.
///
/// `eps` is the finite-difference step; a value `a` passes against a reference `b` when
/// `|a - b| <= atol + rtol * max(|a|, |b|)`. [`Element::FD_EPS`] and [`Element::GRAD_TOL`] are
/// good starting values. The directions are drawn from fixed seeds, so a check is repeatable.
pub fn check_grad<T: Element, F: GradFn<T> + ?Sized>(
    f: &F,
    args: &[Tensor<T>],
    eps: f64,
    rtol: f64,
    atol: f64,
) -> Result<(), GradCheckError> {
    let y = f.value(args);
    let directions: Vec<Tensor<T>> = args
        .iter()
        .enumerate()
        .map(|(i, a)| Tensor::rand_normal(a.shape(), T::zero(), T::one(), 0xD1CE + i as u64))
        .collect();
    let cotangent = Tensor::rand_normal(y.shape(), T::zero(), T::one(), 0xC0DE);

    let jvp = f.jvp(args, &directions);
    if jvp.shape() != y.shape() {
        return Err(GradCheckError::Shape {
            which: "jvp",
            index: 0,
            expected: y.shape().to_vec(),
            found: jvp.shape().to_vec(),
        });
    }

    let step = T::from_f64(eps);
    let shifted = |sign: T| -> Vec<Tensor<T>> {
        args.iter()
            .zip(&directions)
            .map(|(a, d)| a + &(d * (sign * step)))
            .collect()
    };
    let plus = f.value(&shifted(T::one()));
    let minus = f.value(&shifted(-T::one()));
    let denom = 2.0 * eps;
    for (at, ((p, m), j)) in plus
        .as_shared()
        .iter()
        .zip(minus.as_shared().iter())
        .zip(jvp.as_shared().iter())
        .enumerate()
    {
        let fd = (p.to_real() - m.to_real()) / denom;
        if !close(j.to_real(), fd, rtol, atol) {
            return Err(GradCheckError::Jvp {
                at,
                jvp: j.to_real(),
                finite_difference: fd,
            });
        }
    }

    let grads = f.vjp(args, &cotangent);
    for (index, (g, a)) in grads.iter().zip(args).enumerate() {
        if g.shape() != a.shape() {
            return Err(GradCheckError::Shape {
                which: "vjp",
                index,
                expected: a.shape().to_vec(),
                found: g.shape().to_vec(),
            });
        }
    }
    if grads.len() != args.len() {
        return Err(GradCheckError::Shape {
            which: "vjp",
            index: grads.len(),
            expected: vec![args.len()],
            found: vec![grads.len()],
        });
    }
    let jvp_side = dot(&jvp, &cotangent);
    let vjp_side: f64 = grads.iter().zip(&directions).map(|(g, d)| dot(g, d)).sum();
    let scale = jvp_side.abs().max(vjp_side.abs()).max(1.0);
    if !close(jvp_side, vjp_side, rtol, atol * scale) {
        return Err(GradCheckError::DotProduct { jvp_side, vjp_side });
    }
    Ok(())
}
