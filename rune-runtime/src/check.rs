//! Gradient checking: central finite differences against a function's JVP and VJP, and the
//! dot-product test between the two, as `jax.test_util.check_grads` does; at order two, a
//! Hessian-vector product against finite differences of the gradient, and its symmetry.

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
#[non_exhaustive]
pub enum GradCheckError {
    /// A derivative came back with the wrong shape, or the wrong number of them.
    Shape {
        /// `"jvp"`, `"vjp"`, `"grad"` or `"hvp"`.
        which: &'static str,
        /// The argument (for `vjp`, `grad`, `hvp`) or output (for `jvp`, `0`) concerned; for a
        /// wrong count, the count returned (and `expected`/`found` hold the two counts).
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
    /// The Hessian-vector product disagrees with central finite differences of the gradient.
    Hvp {
        /// The argument whose block of `H v` is wrong.
        index: usize,
        /// Flat index of the first element there that fails.
        at: usize,
        /// The Hessian-vector product's value there.
        hvp: f64,
        /// The finite-difference estimate there.
        finite_difference: f64,
    },
    /// ⟨u, H v⟩ ≠ ⟨v, H u⟩: the products are not those of a symmetric matrix, so not of a
    /// Hessian.
    Symmetry {
        /// ⟨u, H v⟩.
        u_hv: f64,
        /// ⟨v, H u⟩.
        v_hu: f64,
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
            GradCheckError::Hvp {
                index,
                at,
                hvp,
                finite_difference,
            } => write!(
                f,
                "Hessian-vector product of argument {index} disagrees with central finite differences of the gradient at element {at}: {hvp} vs {finite_difference}"
            ),
            GradCheckError::Symmetry { u_hv, v_hu } => write!(
                f,
                "Hessian-vector products are not symmetric: <u, H v> = {u_hv} but <v, H u> = {v_hu}"
            ),
        }
    }
}

impl std::error::Error for GradCheckError {}

fn close(a: f64, b: f64, rtol: f64, atol: f64) -> bool {
    (a - b).abs() <= atol + rtol * a.abs().max(b.abs())
}

fn dot<T: Element>(a: &Tensor<T>, b: &Tensor<T>) -> f64 {
    a.view()
        .iter()
        .zip(b.view().iter())
        .map(|(x, y)| x.to_real() * y.to_real())
        .sum()
}

/// ⟨a, b⟩ summed over the arguments.
fn dot_all<T: Element>(a: &[Tensor<T>], b: &[Tensor<T>]) -> f64 {
    a.iter().zip(b).map(|(x, y)| dot(x, y)).sum()
}

/// One standard normal tensor per argument, of its shape, from fixed seeds.
fn random_directions<T: Element>(args: &[Tensor<T>], seed: u64) -> Vec<Tensor<T>> {
    args.iter()
        .enumerate()
        .map(|(i, a)| Tensor::rand_normal(a.shape(), T::zero(), T::one(), seed + i as u64))
        .collect()
}

/// `args + t · directions`, argument by argument.
fn shifted<T: Element>(args: &[Tensor<T>], directions: &[Tensor<T>], t: f64) -> Vec<Tensor<T>> {
    let t = T::from_f64(t);
    args.iter()
        .zip(directions)
        .map(|(a, d)| a + &(d * t))
        .collect()
}

/// Checks that `which` returned one tensor per argument, each of its argument's shape.
fn check_shapes<T: Element>(
    which: &'static str,
    results: &[Tensor<T>],
    args: &[Tensor<T>],
) -> Result<(), GradCheckError> {
    if results.len() != args.len() {
        return Err(GradCheckError::Shape {
            which,
            index: results.len(),
            expected: vec![args.len()],
            found: vec![results.len()],
        });
    }
    for (index, (r, a)) in results.iter().zip(args).enumerate() {
        if r.shape() != a.shape() {
            return Err(GradCheckError::Shape {
                which,
                index,
                expected: a.shape().to_vec(),
                found: r.shape().to_vec(),
            });
        }
    }
    Ok(())
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
    let directions = random_directions(args, 0xD1CE);
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

    let plus = f.value(&shifted(args, &directions, eps));
    let minus = f.value(&shifted(args, &directions, -eps));
    let denom = 2.0 * eps;
    for (at, ((p, m), j)) in plus
        .view()
        .iter()
        .zip(minus.view().iter())
        .zip(jvp.view().iter())
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
    check_shapes("vjp", &grads, args)?;
    let jvp_side = dot(&jvp, &cotangent);
    let vjp_side = dot_all(&grads, &directions);
    let scale = jvp_side.abs().max(vjp_side.abs()).max(1.0);
    if !close(jvp_side, vjp_side, rtol, atol * scale) {
        return Err(GradCheckError::DotProduct { jvp_side, vjp_side });
    }
    Ok(())
}

/// Checks a Hessian-vector product against central finite differences of the gradient along a
/// random direction `v`, `(∇f(x + εv) - ∇f(x - εv)) / 2ε`, and checks its symmetry
/// ⟨u, H v⟩ = ⟨v, H u⟩ with a second random direction `u`.
///
/// `grad(args)` is the gradient of a scalar function, one tensor per argument; `hvp(args, v)` is
/// `H v` for directions `v` (one per argument), shaped likewise. The symmetry test catches a
/// product that is consistent with `grad` when `grad` itself is not a gradient. `eps`, `rtol`
/// and `atol` are as for [`check_grad`]; the directions are drawn from fixed seeds.
///
/// ```
/// use rune_runtime::{check_hvp, Tensor};
///
/// // f(x) = Σ x³/3: ∇f = x², H v = 2x·v.
/// check_hvp(
///     |a: &[Tensor<f64>]| vec![&a[0] * &a[0]],
///     |a: &[Tensor<f64>], v: &[Tensor<f64>]| vec![&(&a[0] * 2.0) * &v[0]],
///     &[Tensor::from_vec(vec![0.5, -1.0, 2.0], &[3])],
///     1e-5,
///     1e-6,
///     1e-6,
/// )
/// .unwrap();
/// ```
pub fn check_hvp<T, G, H>(
    grad: G,
    hvp: H,
    args: &[Tensor<T>],
    eps: f64,
    rtol: f64,
    atol: f64,
) -> Result<(), GradCheckError>
where
    T: Element,
    G: Fn(&[Tensor<T>]) -> Vec<Tensor<T>>,
    H: Fn(&[Tensor<T>], &[Tensor<T>]) -> Vec<Tensor<T>>,
{
    let v = random_directions(args, 0x4E55);
    let u = random_directions(args, 0x5EED);

    let hv = hvp(args, &v);
    check_shapes("hvp", &hv, args)?;
    let plus = grad(&shifted(args, &v, eps));
    check_shapes("grad", &plus, args)?;
    let minus = grad(&shifted(args, &v, -eps));
    check_shapes("grad", &minus, args)?;
    let denom = 2.0 * eps;
    for (index, ((p, m), h)) in plus.iter().zip(&minus).zip(&hv).enumerate() {
        for (at, ((p, m), h)) in p
            .view()
            .iter()
            .zip(m.view().iter())
            .zip(h.view().iter())
            .enumerate()
        {
            let fd = (p.to_real() - m.to_real()) / denom;
            if !close(h.to_real(), fd, rtol, atol) {
                return Err(GradCheckError::Hvp {
                    index,
                    at,
                    hvp: h.to_real(),
                    finite_difference: fd,
                });
            }
        }
    }

    let hu = hvp(args, &u);
    check_shapes("hvp", &hu, args)?;
    let u_hv = dot_all(&u, &hv);
    let v_hu = dot_all(&v, &hu);
    let scale = u_hv.abs().max(v_hu.abs()).max(1.0);
    if !close(u_hv, v_hu, rtol, atol * scale) {
        return Err(GradCheckError::Symmetry { u_hv, v_hu });
    }
    Ok(())
}
