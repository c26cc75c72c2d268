//! Shared test helpers: [`check_variants!`] runs every function that `#[differentiable]`
//! generates beside `f` and checks them against each other and against finite differences of
//! `f`.
//!
//! Use it from a test file with `mod support;`:
//!
//! ```ignore
//! mod support;
//! use support::check_variants;
//!
//! #[differentiable]
//! fn f(x: &Tensor<f64>, model: &Model, #[nodiff] c: f64) -> Tensor<f64> { .. }
//!
//! let x = Tensor::rand_normal(&[2, 3], 0.0, 1.0, 1);
//! let model = Model { .. };
//! check_variants!(f, f_value_and_grad, f_grad, f_vjp, f_jvp, f_pullback; [x, model]; (&x, &model, 0.5));
//! ```
//!
//! `[x, model]` names the local variables that hold the differentiated parameters, in parameter
//! order (each a `Tensor<f64>` or a structure deriving `Differentiable` over `f64`); the
//! parenthesised list is how `f` is called. The macro rebinds the names in the list to perturbed
//! copies inside closures and evaluates the call there, so the arguments may be any expressions
//! of those names. A function defined as `f` inside a module `m` (with its variants beside it)
//! can be named by the module alone: `check_variants!(mod m; [x]; (&x))`.
//!
//! What is checked, for a value with one element:
//!
//! 1. every variant's value is `f`'s value, bit for bit: the generated code computes what the
//!    user wrote;
//! 2. the gradient of `f_value_and_grad` agrees with central finite differences of `f`
//!    (five-point stencils, Richardson-extrapolated: within 1e-6 of `max(1, |difference|)`);
//! 3. `f_grad` is that gradient, bit for bit;
//! 4. `f_vjp` with a random cotangent `w` is `w` times the gradient, and `f_pullback`'s
//!    pullback gives the same gradients as `f_value_and_grad` and `f_vjp` (called twice);
//! 5. `f_jvp` along random tangents agrees with finite differences of `f` along them;
//! 6. the dot-product test ⟨JVP(v), w⟩ = ⟨v, VJP(w)⟩;
//! 7. all of it again with the leaves laid out in memory as a transposed view, a flipped view
//!    (negative strides) and a stepped slice ([`Layout`]): every variant's value is `f`'s at the
//!    same leaves bit for bit, and the derivatives are those of the standard layout.
//!
//! [`check_vector_variants!`] does the same for a value of any shape without `f_grad` and
//! `f_value_and_grad`: the VJP is checked against finite differences of ⟨w, f⟩.
//!
//! A failure panics with the function's name, what disagreed, where (the leaf path, such as
//! `model.ws[1]`, and the flat element index) and the numbers.
#![allow(dead_code, unused_macros, unused_imports)]

use rune_ad::prelude::*;

/// Relative tolerance of a derivative against finite differences, on the scale
/// `max(1, |finite difference|)`.
pub const FD_TOL: f64 = 1e-6;
/// Finite-difference step along a unit direction. With Richardson extrapolation (see
/// `central_difference`) the truncation error is of order `h⁶` times the seventh derivative, and
/// the rounding error about `2 ε |f| / h` (4e-12 for values of order one): far below [`FD_TOL`]
/// on smooth functions, also deep compositions whose fifth derivatives reach 1e14 along a
/// random direction.
pub const FD_STEP: f64 = 1e-4;
/// Relative tolerance of identities that hold up to rounding: the dot-product test,
/// `vjp(w) = w · grad`, the pullback against `f_vjp`.
pub const EXACT_TOL: f64 = 1e-9;

/// The leaf tensors of the differentiated parameters (or of their gradients), in leaf order.
pub type Leaves = Vec<Tensor<f64>>;

/// `f_value_and_grad` at a point given as leaves.
pub type ValueAndGrad<'a> = &'a dyn Fn(&[Tensor<f64>]) -> (Tensor<f64>, Leaves);

/// `f_grad` at a point given as leaves.
pub type GradOnly<'a> = &'a dyn Fn(&[Tensor<f64>]) -> Leaves;

/// `error <= tol`; false when `error` is NaN.
fn within(error: f64, tol: f64) -> bool {
    error <= tol
}

/// Example `i` of a batched tensor (its leading axis the batch axis).
pub fn example<T: Clone>(t: &Tensor<T>, i: usize) -> Tensor<T> {
    let mut ranges: Vec<(usize, usize)> = t.shape().iter().map(|&d| (0, d)).collect();
    ranges[0] = (i, i + 1);
    t.shrink(&ranges).squeeze(0)
}

/// `got` against `expected`, element by element, to `tol` relative to `1 + |expected|`; `what`
/// names the comparison in a failure.
pub fn assert_close<T: Element + Into<f64>>(
    got: &Tensor<T>,
    expected: &Tensor<T>,
    tol: f64,
    what: &str,
) {
    assert_eq!(got.shape(), expected.shape(), "{what}: shapes");
    for (k, (g, e)) in got.to_vec().into_iter().zip(expected.to_vec()).enumerate() {
        let (g, e): (f64, f64) = (g.into(), e.into());
        assert!(
            (g - e).abs() <= tol * (1.0 + e.abs()),
            "{what}[{k}]: {g} vs {e}"
        );
    }
}

/// The leaves of a differentiable value (a tensor or a structure), cloned, in leaf order.
pub fn leaves_of<D: Differentiable<Elem = f64>>(value: &D) -> Vec<Tensor<f64>> {
    value.leaves().into_iter().cloned().collect()
}

/// The leaves' paths (`"model.ws[1]"`), `name` being the variable's.
pub fn paths_of<D: Differentiable<Elem = f64>>(value: &D, name: &str) -> Vec<String> {
    value.leaf_paths(name)
}

/// A copy of `like` whose leaves are the next ones from `leaves`.
///
/// # Panics
/// When `leaves` runs out.
pub fn rebuild<'a, D: Differentiable<Elem = f64>>(
    like: &D,
    leaves: &mut impl Iterator<Item = &'a Tensor<f64>>,
) -> D {
    let mut out = like.clone();
    for leaf in out.leaves_mut() {
        *leaf = leaves
            .next()
            .expect("check_variants: fewer leaves than parameters")
            .clone();
    }
    out
}

/// A function under test and its variants, each evaluated at the point of the check, except
/// `value`, which takes the leaves of every differentiated parameter.
#[allow(clippy::type_complexity)]
pub struct Variants<'a> {
    /// The function's name, for messages.
    pub name: &'static str,
    /// The path of each leaf of the differentiated parameters (`"x"`, `"model.ws[1]"`).
    pub paths: Vec<String>,
    /// The leaves at which everything is checked.
    pub point: Vec<Tensor<f64>>,
    /// `f` with the differentiated parameters' leaves replaced.
    pub value: &'a dyn Fn(&[Tensor<f64>]) -> Tensor<f64>,
    /// `f_vjp` at a point (given as leaves) with a cotangent.
    pub vjp: &'a dyn Fn(&[Tensor<f64>], &Tensor<f64>) -> (Tensor<f64>, Leaves),
    /// `f_jvp` at a point with tangents, both given as leaves.
    pub jvp: &'a dyn Fn(&[Tensor<f64>], &[Tensor<f64>]) -> (Tensor<f64>, Tensor<f64>),
    /// `f_pullback` at a point, its pullback called on each cotangent in turn.
    pub pullback: &'a dyn Fn(&[Tensor<f64>], &[Tensor<f64>]) -> (Tensor<f64>, Vec<Leaves>),
}

/// A memory layout the leaves of a check are laid out in again: the same values, other strides.
#[derive(Clone, Copy, Debug)]
pub enum Layout {
    /// Column-major (a transposed view's strides); leaves of two or more axes.
    Transposed,
    /// Every axis stored backwards (negative strides, as `flip` makes).
    Flipped,
    /// Every other element of a buffer twice as long along the last axis (a stepped slice).
    Strided,
}

impl Layout {
    pub const ALL: [Layout; 3] = [Layout::Transposed, Layout::Flipped, Layout::Strided];

    /// `leaf`'s values in this layout, or `None` where the layout is the standard one for
    /// this shape (no axes to reverse or step over).
    pub fn apply(self, leaf: &Tensor<f64>) -> Option<Tensor<f64>> {
        use rune_ad::ndarray::{ArrayD, Axis, IxDyn, ShapeBuilder, Slice};
        let view = leaf.view();
        let shape = leaf.shape().to_vec();
        let ndim = shape.len();
        if leaf.len() < 2 {
            return None;
        }
        let array = match self {
            Layout::Transposed => {
                if shape.iter().filter(|&&n| n > 1).count() < 2 {
                    return None;
                }
                // Column-major order is the reversed-axes view's logical order.
                let data: Vec<f64> = view.t().iter().copied().collect();
                ArrayD::from_shape_vec(IxDyn(&shape).f(), data).expect("the element count fits")
            }
            Layout::Flipped => {
                let mut reversed = view.to_owned();
                for axis in 0..ndim {
                    reversed.invert_axis(Axis(axis));
                }
                let mut stored = reversed.as_standard_layout().into_owned();
                for axis in 0..ndim {
                    stored.invert_axis(Axis(axis));
                }
                stored
            }
            Layout::Strided => {
                let mut wide_shape = shape.clone();
                wide_shape[ndim - 1] *= 2;
                let mut wide = ArrayD::from_elem(IxDyn(&wide_shape), f64::NAN);
                let every_other =
                    |ax: rune_ad::ndarray::AxisDescription| match ax.axis.index() + 1 == ndim {
                        true => Slice::new(0, None, 2),
                        false => Slice::from(..),
                    };
                wide.slice_each_axis_mut(every_other).assign(&view);
                wide.slice_each_axis_inplace(every_other);
                wide
            }
        };
        Some(Tensor::from_array(array))
    }
}

fn shapes(leaves: &[Tensor<f64>]) -> Vec<Vec<usize>> {
    leaves.iter().map(|t| t.shape().to_vec()).collect()
}

fn dot(a: &[Tensor<f64>], b: &[Tensor<f64>]) -> (f64, f64) {
    let mut sum = 0.0;
    let mut magnitude = 0.0;
    for (x, y) in a.iter().zip(b) {
        for (p, q) in x.to_vec().into_iter().zip(y.to_vec()) {
            sum += p * q;
            magnitude += (p * q).abs();
        }
    }
    (sum, magnitude)
}

/// `point + s · direction`, leaf by leaf.
fn shifted(point: &[Tensor<f64>], direction: &[Tensor<f64>], s: f64) -> Vec<Tensor<f64>> {
    point
        .iter()
        .zip(direction)
        .map(|(p, d)| p + &(d * s))
        .collect()
}

/// The derivative at 0 of `g`, a function of one variable moving along a unit direction,
/// elementwise over its value: five-point central differences `(g(-2h) - 8 g(-h) + 8 g(h) -
/// g(2h)) / 12h` at steps `2h` and `h`, Richardson-extrapolated (`d(h) + (d(h) - d(2h)) / 15`),
/// which cancels the `h⁴` term of the error.
fn central_difference(g: &dyn Fn(f64) -> Vec<f64>) -> Vec<f64> {
    let five_point = |h: f64| -> Vec<f64> {
        let (m2, m1, p1, p2) = (g(-2.0 * h), g(-h), g(h), g(2.0 * h));
        (0..m1.len())
            .map(|k| (m2[k] - 8.0 * m1[k] + 8.0 * p1[k] - p2[k]) / (12.0 * h))
            .collect()
    };
    let (coarse, fine) = (five_point(2.0 * FD_STEP), five_point(FD_STEP));
    fine.iter()
        .zip(&coarse)
        .map(|(f, c)| f + (f - c) / 15.0)
        .collect()
}

/// The disagreements found so far, reported together at the end of a check.
#[derive(Default)]
struct Report {
    failures: Vec<String>,
}

impl Report {
    fn fail(&mut self, message: String) {
        self.failures.push(message);
    }

    /// `got` is `want` bit for bit, shape included.
    fn same_value(&mut self, which: &str, got: &Tensor<f64>, want: &Tensor<f64>) {
        if got.shape() != want.shape() {
            return self.fail(format!(
                "the value of {which} has shape {:?}, f's {:?}",
                got.shape(),
                want.shape()
            ));
        }
        let (g, w) = (got.to_vec(), want.to_vec());
        if let Some(k) = (0..g.len()).find(|&k| g[k].to_bits() != w[k].to_bits()) {
            self.fail(format!(
                "the value of {which} differs from f's at element {k}: {:e} vs {:e}{}",
                g[k],
                w[k],
                if g.len() > 1 {
                    format!(" ({g:?} vs {w:?})")
                } else {
                    String::new()
                }
            ));
        }
    }

    /// `got` has one leaf per parameter leaf, of its shape; false (and a failure) otherwise.
    fn same_shapes(&mut self, which: &str, got: &[Tensor<f64>], params: &Variants<'_>) -> bool {
        let ok = shapes(got) == shapes(&params.point);
        if !ok {
            self.fail(format!(
                "{which} has leaves of shapes {:?}, the parameters {:?} ({:?})",
                shapes(got),
                shapes(&params.point),
                params.paths
            ));
        }
        ok
    }

    /// Every element of `got` within `tol · max(1, |want|)` of `want` (exactly equal when `tol`
    /// is `None`); the message names the worst element.
    fn close(
        &mut self,
        which: &str,
        reference: &str,
        got: &[Tensor<f64>],
        want: &[Tensor<f64>],
        paths: &[String],
        tol: Option<f64>,
    ) {
        let mut worst: Option<(f64, String, f64, f64)> = None;
        let mut failures = 0;
        let mut count = 0;
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            for (k, (g, w)) in g.to_vec().into_iter().zip(w.to_vec()).enumerate() {
                count += 1;
                let error = (g - w).abs() / w.abs().max(1.0);
                let bad = match tol {
                    Some(tol) => !within(error, tol),
                    None => g.to_bits() != w.to_bits(),
                };
                if bad {
                    failures += 1;
                    if worst.as_ref().is_none_or(|(e, ..)| !within(error, *e)) {
                        let at = match paths.get(i) {
                            Some(path) => format!("{path}, flat element {k}"),
                            None => format!("element {k}"),
                        };
                        worst = Some((error, at, g, w));
                    }
                }
            }
        }
        if let Some((error, at, g, w)) = worst {
            let tolerance = match tol {
                Some(tol) => format!("tolerance {tol:e}"),
                None => "expected bit for bit".to_owned(),
            };
            self.fail(format!(
                "{which} disagrees with {reference} at {failures} of {count} element(s); worst at \
                 {at}: {g:e} vs {w:e} (relative error {error:e}, {tolerance})"
            ));
        }
    }

    fn finish(self, name: &str) {
        if !self.failures.is_empty() {
            panic!(
                "`{name}`: {} check(s) failed:\n  - {}",
                self.failures.len(),
                self.failures.join("\n  - ")
            );
        }
    }
}

impl Variants<'_> {
    /// Checks a function whose value has one element: every check of the module documentation.
    /// All disagreements are reported together.
    pub fn check_scalar(&self, value_and_grad: ValueAndGrad<'_>, grad_only: GradOnly<'_>) {
        let name = self.name;
        let value = (self.value)(&self.point);
        assert!(
            value.len() == 1,
            "`{name}`: check_variants! needs a value with one element, got shape {:?} \
             (use check_vector_variants!)",
            value.shape()
        );
        let mut report = Report::default();
        let (vag_value, grad) = value_and_grad(&self.point);
        report.same_value("f_value_and_grad", &vag_value, &value);
        let grad_ok = report.same_shapes("the gradient of f_value_and_grad", &grad, self);
        let grad_of_f_grad = grad_only(&self.point);
        if report.same_shapes("f_grad", &grad_of_f_grad, self) && grad_ok {
            report.close(
                "f_grad",
                "the gradient of f_value_and_grad",
                &grad_of_f_grad,
                &grad,
                &self.paths,
                None,
            );
        }
        let w = Tensor::rand_normal(value.shape(), 0.0, 1.0, 0xC0DE);
        let (vjp_value, vjp_grad) = (self.vjp)(&self.point, &w);
        report.same_value("f_vjp", &vjp_value, &value);
        let vjp_ok = report.same_shapes("f_vjp", &vjp_grad, self);
        let tangents = self.tangents();
        let (jvp_value, jvp) = (self.jvp)(&self.point, &tangents);
        report.same_value("f_jvp", &jvp_value, &value);
        let pulled = self.pullback(&mut report, &value, &w);

        if grad_ok {
            let fd = self.finite_difference_gradient(None);
            report.close(
                "the gradient of f_value_and_grad",
                "central finite differences of f",
                &grad,
                &fd,
                &self.paths,
                Some(FD_TOL),
            );
        }
        if grad_ok && vjp_ok {
            let scaled: Vec<Tensor<f64>> = grad.iter().map(|g| g * w.item()).collect();
            report.close(
                "f_vjp with a random cotangent w",
                "w times the gradient of f_value_and_grad",
                &vjp_grad,
                &scaled,
                &self.paths,
                Some(EXACT_TOL),
            );
        }
        if let Some((at_ones, _)) = &pulled {
            if grad_ok {
                report.close(
                    "the pullback of f_pullback at ones",
                    "the gradient of f_value_and_grad",
                    at_ones,
                    &grad,
                    &self.paths,
                    Some(EXACT_TOL),
                );
            }
        }
        self.derivatives(
            &mut report,
            &value,
            &w,
            vjp_ok.then_some(&vjp_grad),
            &pulled,
            &tangents,
            &jvp,
        );
        self.layouts(&mut report, Some((value_and_grad, grad_only)));
        report.finish(name);
    }

    /// Checks a function whose value may have any shape: values, the VJP against finite
    /// differences of ⟨w, f⟩, the pullback, the JVP and the dot-product test. All disagreements
    /// are reported together.
    pub fn check_vector(&self) {
        let value = (self.value)(&self.point);
        let mut report = Report::default();
        let w = Tensor::rand_normal(value.shape(), 0.0, 1.0, 0xC0DE);
        let (vjp_value, vjp_grad) = (self.vjp)(&self.point, &w);
        report.same_value("f_vjp", &vjp_value, &value);
        let vjp_ok = report.same_shapes("f_vjp", &vjp_grad, self);
        let tangents = self.tangents();
        let (jvp_value, jvp) = (self.jvp)(&self.point, &tangents);
        report.same_value("f_jvp", &jvp_value, &value);
        let pulled = self.pullback(&mut report, &value, &w);
        if vjp_ok {
            let fd = self.finite_difference_gradient(Some(&w));
            report.close(
                "f_vjp with a random cotangent w",
                "central finite differences of <w, f>",
                &vjp_grad,
                &fd,
                &self.paths,
                Some(FD_TOL),
            );
        }
        self.derivatives(
            &mut report,
            &value,
            &w,
            vjp_ok.then_some(&vjp_grad),
            &pulled,
            &tangents,
            &jvp,
        );
        self.layouts(&mut report, None);
        report.finish(self.name);
    }

    /// Every variant again with the leaves in each [`Layout`]: each value is `f`'s at the same
    /// leaves bit for bit (so fused code over strided, reversed and transposed inputs computes
    /// what the function does), and the derivatives are those at the standard layout up to
    /// rounding.
    fn layouts(&self, report: &mut Report, scalar: Option<(ValueAndGrad<'_>, GradOnly<'_>)>) {
        let value = (self.value)(&self.point);
        let w = Tensor::rand_normal(value.shape(), 0.0, 1.0, 0xC0DE);
        let tangents = self.tangents();
        let (_, vjp_want) = (self.vjp)(&self.point, &w);
        let (_, jvp_want) = (self.jvp)(&self.point, &tangents);
        for layout in Layout::ALL {
            let laid: Vec<Option<Tensor<f64>>> =
                self.point.iter().map(|l| layout.apply(l)).collect();
            if laid.iter().all(Option::is_none) {
                continue;
            }
            let point: Vec<Tensor<f64>> = laid
                .into_iter()
                .zip(&self.point)
                .map(|(l, p)| l.unwrap_or_else(|| p.clone()))
                .collect();
            let at = |what: &str| format!("{what} ({layout:?} leaves)");
            let value = (self.value)(&point);
            let (v, vjp) = (self.vjp)(&point, &w);
            report.same_value(&at("f_vjp"), &v, &value);
            report.close(
                &at("f_vjp"),
                "f_vjp",
                &vjp,
                &vjp_want,
                &self.paths,
                Some(EXACT_TOL),
            );
            let (v, jvp) = (self.jvp)(&point, &tangents);
            report.same_value(&at("f_jvp"), &v, &value);
            report.close(
                &at("f_jvp"),
                "f_jvp",
                std::slice::from_ref(&jvp),
                std::slice::from_ref(&jvp_want),
                &[],
                Some(EXACT_TOL),
            );
            let (v, mut pulled) = (self.pullback)(&point, std::slice::from_ref(&w));
            report.same_value(&at("f_pullback"), &v, &value);
            let pulled = pulled.pop().expect("one cotangent");
            report.close(
                &at("f_pullback"),
                "f_vjp",
                &pulled,
                &vjp_want,
                &self.paths,
                Some(EXACT_TOL),
            );
            if let Some((value_and_grad, grad_only)) = scalar {
                let (v, grad) = value_and_grad(&point);
                report.same_value(&at("f_value_and_grad"), &v, &value);
                let grad_want: Vec<Tensor<f64>> = vjp_want.iter().map(|g| g / w.item()).collect();
                report.close(
                    &at("f_value_and_grad"),
                    "f_vjp / w",
                    &grad,
                    &grad_want,
                    &self.paths,
                    Some(EXACT_TOL),
                );
                report.close(
                    &at("f_grad"),
                    "f_value_and_grad",
                    &grad_only(&point),
                    &grad,
                    &self.paths,
                    None,
                );
            }
        }
    }

    /// Random tangents, one per leaf, from fixed seeds.
    fn tangents(&self) -> Vec<Tensor<f64>> {
        self.point
            .iter()
            .enumerate()
            .map(|(i, p)| Tensor::rand_normal(p.shape(), 0.0, 1.0, 0xD1CE + i as u64))
            .collect()
    }

    /// `f_pullback`'s value, and its pullback at ones and then at `w` (one pullback serves
    /// both), when their shapes are right.
    fn pullback(
        &self,
        report: &mut Report,
        value: &Tensor<f64>,
        w: &Tensor<f64>,
    ) -> Option<(Leaves, Leaves)> {
        let ones = Tensor::ones(value.shape());
        let (pb_value, mut pulled) = (self.pullback)(&self.point, &[ones, w.clone()]);
        report.same_value("f_pullback", &pb_value, value);
        let at_w = pulled.pop().expect("two cotangents");
        let at_ones = pulled.pop().expect("two cotangents");
        let ok_ones = report.same_shapes("the pullback of f_pullback at ones", &at_ones, self);
        let ok_w = report.same_shapes("the pullback of f_pullback at w", &at_w, self);
        (ok_ones && ok_w).then_some((at_ones, at_w))
    }

    /// What both kinds of check share: the pullback against `f_vjp`, the JVP against finite
    /// differences along the tangents, and the dot-product test.
    #[allow(clippy::too_many_arguments)]
    fn derivatives(
        &self,
        report: &mut Report,
        value: &Tensor<f64>,
        w: &Tensor<f64>,
        vjp_grad: Option<&Vec<Tensor<f64>>>,
        pulled: &Option<(Leaves, Leaves)>,
        tangents: &[Tensor<f64>],
        jvp: &Tensor<f64>,
    ) {
        if let (Some((_, at_w)), Some(vjp_grad)) = (pulled, vjp_grad) {
            report.close(
                "the pullback of f_pullback at w (its second call)",
                "f_vjp at w",
                at_w,
                vjp_grad,
                &self.paths,
                Some(EXACT_TOL),
            );
        }
        if jvp.shape() != value.shape() {
            return report.fail(format!(
                "the tangent of f_jvp has shape {:?}, the value {:?}",
                jvp.shape(),
                value.shape()
            ));
        }
        // Along the unit direction `v / |v|`, then scaled back by `|v|`.
        let norm = dot(tangents, tangents).0.sqrt();
        let unit: Vec<Tensor<f64>> = tangents.iter().map(|t| t / norm).collect();
        let fd: Vec<f64> =
            central_difference(&|s| (self.value)(&shifted(&self.point, &unit, s)).to_vec())
                .into_iter()
                .map(|d| d * norm)
                .collect();
        report.close(
            "the tangent of f_jvp along random tangents",
            "central finite differences of f along them",
            std::slice::from_ref(jvp),
            &[Tensor::from_vec(fd, value.shape())],
            &[],
            Some(FD_TOL),
        );
        if let Some(vjp_grad) = vjp_grad {
            let (jvp_side, jvp_magnitude) = dot(std::slice::from_ref(jvp), std::slice::from_ref(w));
            let (vjp_side, vjp_magnitude) = dot(tangents, vjp_grad);
            let scale = jvp_magnitude.max(vjp_magnitude).max(1.0);
            if !within((jvp_side - vjp_side).abs(), EXACT_TOL * scale) {
                report.fail(format!(
                    "dot-product test failed: <JVP(v), w> = {jvp_side:e} but <v, VJP(w)> = \
                     {vjp_side:e} (difference {:e}, scale {scale:e})",
                    (jvp_side - vjp_side).abs()
                ));
            }
        }
    }

    /// Central finite differences of `f` (or of ⟨w, f⟩), leaf by leaf, element by element.
    fn finite_difference_gradient(&self, w: Option<&Tensor<f64>>) -> Vec<Tensor<f64>> {
        let project = |t: Tensor<f64>| -> f64 {
            match w {
                Some(w) => dot(std::slice::from_ref(&t), std::slice::from_ref(w)).0,
                None => t.to_vec()[0],
            }
        };
        let mut out = Vec::new();
        for (i, leaf) in self.point.iter().enumerate() {
            let base = leaf.to_vec();
            let mut grad = vec![0.0; base.len()];
            for (k, g) in grad.iter_mut().enumerate() {
                *g = central_difference(&|s| {
                    let mut moved = base.clone();
                    moved[k] += s;
                    let mut point = self.point.clone();
                    point[i] = Tensor::from_vec(moved, leaf.shape());
                    vec![project((self.value)(&point))]
                })[0];
            }
            out.push(Tensor::from_vec(grad, leaf.shape()));
        }
        out
    }
}

/// Runs every variant of a `#[differentiable]` function with a one-element value and checks
/// them against each other and against finite differences; see the module documentation.
///
/// `check_variants!(f, f_value_and_grad, f_grad, f_vjp, f_jvp, f_pullback; [x, y]; (&x, &y, c))`,
/// or `check_variants!(mod m; [x, y]; (&x, &y, c))` for a function named `f` in module `m`.
macro_rules! check_variants {
    // The closures shared by both macros; `$variants => $check` runs the checks on the
    // `Variants` bound to `$variants`.
    (@common $name:expr, $value:ident, $vjp:path, $jvp:path, $pullback:path;
     [$($p:ident),+]; ($($arg:expr),*); $variants:ident => $check:expr) => {{
        let vjp = |leaves: &[::rune_ad::Tensor<f64>], cotangent: &::rune_ad::Tensor<f64>| {
            let mut leaves = leaves.iter();
            $( let $p = $crate::support::rebuild(&$p, &mut leaves); )+
            let (value, grads) = $vjp($($arg,)* cotangent);
            #[allow(unused_parens)]
            let ($($p),+) = grads;
            let mut leaves = Vec::new();
            $( leaves.extend($crate::support::leaves_of(&$p)); )+
            (value, leaves)
        };
        let jvp = |leaves: &[::rune_ad::Tensor<f64>], tangents: &[::rune_ad::Tensor<f64>]| {
            let mut leaves = leaves.iter();
            $( let $p = $crate::support::rebuild(&$p, &mut leaves); )+
            let mut tangents = tangents.iter();
            $jvp($($arg,)* $( &$crate::support::rebuild(&$p, &mut tangents) ),+)
        };
        let pullback = |leaves: &[::rune_ad::Tensor<f64>], cotangents: &[::rune_ad::Tensor<f64>]| {
            let mut leaves = leaves.iter();
            $( let $p = $crate::support::rebuild(&$p, &mut leaves); )+
            let (value, pullback) = $pullback($($arg),*);
            let pulled = cotangents
                .iter()
                .map(|cotangent| {
                    #[allow(unused_parens)]
                    let ($($p),+) = pullback(cotangent);
                    let mut leaves = Vec::new();
                    $( leaves.extend($crate::support::leaves_of(&$p)); )+
                    leaves
                })
                .collect();
            (value, pulled)
        };
        let mut paths = Vec::new();
        let mut point = Vec::new();
        $(
            paths.extend($crate::support::paths_of(&$p, stringify!($p)));
            point.extend($crate::support::leaves_of(&$p));
        )+
        let $variants = $crate::support::Variants {
            name: $name,
            paths,
            point,
            value: &$value,
            vjp: &vjp,
            jvp: &jvp,
            pullback: &pullback,
        };
        $check
    }};
    (@named $name:expr; $f:path, $vag:path, $grad:path, $vjp:path, $jvp:path, $pullback:path;
     [$($p:ident),+]; ($($arg:expr),*)) => {{
        let value = |leaves: &[::rune_ad::Tensor<f64>]| {
            let mut leaves = leaves.iter();
            $( let $p = $crate::support::rebuild(&$p, &mut leaves); )+
            $f($($arg),*)
        };
        let value_and_grad = |leaves: &[::rune_ad::Tensor<f64>]| {
            let mut leaves = leaves.iter();
            $( let $p = $crate::support::rebuild(&$p, &mut leaves); )+
            let (value, grads) = $vag($($arg),*);
            #[allow(unused_parens)]
            let ($($p),+) = grads;
            let mut leaves = Vec::new();
            $( leaves.extend($crate::support::leaves_of(&$p)); )+
            (value, leaves)
        };
        let grad = |leaves: &[::rune_ad::Tensor<f64>]| {
            let mut leaves = leaves.iter();
            $( let $p = $crate::support::rebuild(&$p, &mut leaves); )+
            let grads = $grad($($arg),*);
            #[allow(unused_parens)]
            let ($($p),+) = grads;
            let mut leaves = Vec::new();
            $( leaves.extend($crate::support::leaves_of(&$p)); )+
            leaves
        };
        $crate::support::check_variants!(@common $name, value, $vjp, $jvp, $pullback;
            [$($p),+]; ($($arg),*); variants => variants.check_scalar(&value_and_grad, &grad))
    }};
    (mod $m:ident; [$($p:ident),+ $(,)?]; ($($arg:expr),* $(,)?)) => {
        $crate::support::check_variants!(@named stringify!($m);
            $m::f, $m::f_value_and_grad, $m::f_grad, $m::f_vjp, $m::f_jvp, $m::f_pullback;
            [$($p),+]; ($($arg),*))
    };
    ($f:path, $vag:path, $grad:path, $vjp:path, $jvp:path, $pullback:path;
     [$($p:ident),+ $(,)?]; ($($arg:expr),* $(,)?)) => {
        $crate::support::check_variants!(@named stringify!($f);
            $f, $vag, $grad, $vjp, $jvp, $pullback; [$($p),+]; ($($arg),*))
    };
}

/// Like [`check_variants!`] for a value of any shape: `f`, `f_vjp`, `f_jvp` and `f_pullback`.
///
/// `check_vector_variants!(f, f_vjp, f_jvp, f_pullback; [x]; (&x))` or
/// `check_vector_variants!(mod m; [x]; (&x))`.
macro_rules! check_vector_variants {
    (@named $name:expr; $f:path, $vjp:path, $jvp:path, $pullback:path;
     [$($p:ident),+]; ($($arg:expr),*)) => {{
        let value = |leaves: &[::rune_ad::Tensor<f64>]| {
            let mut leaves = leaves.iter();
            $( let $p = $crate::support::rebuild(&$p, &mut leaves); )+
            $f($($arg),*)
        };
        $crate::support::check_variants!(@common $name, value, $vjp, $jvp, $pullback;
            [$($p),+]; ($($arg),*); variants => variants.check_vector())
    }};
    (mod $m:ident; [$($p:ident),+ $(,)?]; ($($arg:expr),* $(,)?)) => {
        $crate::support::check_vector_variants!(@named stringify!($m);
            $m::f, $m::f_vjp, $m::f_jvp, $m::f_pullback; [$($p),+]; ($($arg),*))
    };
    ($f:path, $vjp:path, $jvp:path, $pullback:path;
     [$($p:ident),+ $(,)?]; ($($arg:expr),* $(,)?)) => {
        $crate::support::check_vector_variants!(@named stringify!($f);
            $f, $vjp, $jvp, $pullback; [$($p),+]; ($($arg),*))
    };
}

pub(crate) use {check_variants, check_vector_variants};
