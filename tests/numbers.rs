//! Functions of numbers at native speed: a function whose differentiated values are all
//! `f32`/`f64` numbers is written on the numbers themselves, with no tensor in either pass.
//!
//! Each model is written twice from one body: as it is, and with `fuse = false`, which writes
//! it on 0-d tensors as before. The twins must agree (values bit for bit, derivatives to
//! rounding), every variant is checked against central differences and the dot-product test,
//! and an allocation counter shows that the functions of numbers make no tensor.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use rune_ad::prelude::*;

/// Counts the allocations of the current thread (tests run on threads of their own).
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is passed on to `System` unchanged; the counter is a thread-local `Cell`
// that never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The allocations `f` makes on this thread.
fn allocations<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let before = ALLOCATIONS.with(Cell::get);
    let r = f();
    (r, ALLOCATIONS.with(Cell::get) - before)
}

/// That `count` allocations satisfy `ok`, where functions of numbers are written on numbers.
/// (Under the `no-fusion` feature they run on 0-d tensors, which allocate for every op: there
/// is nothing to check, and the values are checked as everywhere.)
#[track_caller]
fn check_allocations(count: usize, ok: impl Fn(usize) -> bool) {
    if !cfg!(feature = "no-fusion") {
        assert!(ok(count), "{count} allocations");
    }
}

/// A function of numbers and its twin on 0-d tensors (`fuse = false`), from one body.
macro_rules! twins {
    ($(#[$doc:meta])* fn $numbers:ident / $tensors:ident
        ($($(#[$nd:ident])? $p:ident: $t:ty),*) -> $r:ty $body:block) => {
        $(#[$doc])*
        #[differentiable]
        fn $numbers($($(#[$nd])? $p: $t),*) -> $r $body
        #[differentiable(fuse = false)]
        fn $tensors($($(#[$nd])? $p: $t),*) -> $r $body
    };
}

twins! {
    /// The Lorenz system, 3 variables, integrated by Euler's method: a loop of numbers.
    fn lorenz / lorenz_tensors(sigma: f64, rho: f64, beta: f64, #[nodiff] steps: usize) -> f64 {
        let dt = 0.002;
        let mut x = 1.0;
        let mut y = 1.0;
        let mut z = 1.0;
        for _ in 0..steps {
            let dx = sigma * (y - x);
            let dy = x * (rho - z) - y;
            let dz = x * y - beta * z;
            x += dx * dt;
            y += dy * dt;
            z += dz * dt;
        }
        x * y - z / 3.0
    }
}

twins! {
    /// Straight-line code through the unary and binary functions.
    fn mixed / mixed_tensors(x: f64, y: f64) -> f64 {
        let a = x.exp() * y.ln() + x.powi(3) - y.powf(1.5);
        let b = x.tanh() + x.atan2(y) + x.hypot(y) + x.abs().sqrt() + (-y).sin().cos();
        a / b + 1.0 / (1.0 + (-x * y).exp())
    }
}

twins! {
    /// A loop that skips and leaves early, over a value carried through it.
    fn early / early_tensors(x: f64, y: f64, #[nodiff] n: usize) -> f64 {
        let mut r = x * y;
        for i in 0..n {
            if i % 3 == 1 {
                continue;
            }
            if i == 7 {
                r *= x;
                break;
            }
            r = (r * 0.5).sin() + y;
        }
        r
    }
}

twins! {
    /// An early `return` from inside a loop, and closures.
    fn returns / returns_tensors(x: f64, y: f64, #[nodiff] n: usize) -> f64 {
        let damp = |v: f64| v * 0.9 + 0.1;
        let mut r = x;
        for i in 0..n {
            r = damp(r) * y;
            if i == 4 {
                return r.exp();
            }
        }
        r - x
    }
}

twins! {
    /// Piecewise: branches and a `while` loop on comparisons of the numbers.
    fn piecewise / piecewise_tensors(x: f64, y: f64) -> f64 {
        let mut r = if x > 1.0 { x * y } else { (x * y).sin() };
        let mut k = 0;
        while r < 10.0 && k < 50 {
            r = r * 1.5 + y;
            k += 1;
        }
        if r >= y * 12.0 {
            r - y
        } else {
            r * x
        }
    }
}

twins! {
    /// Rosenbrock's function of an array: a loop over its indices.
    fn rosenbrock / rosenbrock_tensors(x: [f64; 4]) -> f64 {
        let mut s = 0.0;
        for i in 0..x.len() - 1 {
            let a = x[i + 1] - x[i] * x[i];
            let b = 1.0 - x[i];
            s += 100.0 * a * a + b * b;
        }
        s
    }
}

twins! {
    /// The energy of three particles in the plane joined by springs, their positions in one
    /// borrowed array: nested loops over pairs.
    fn pair_energy / pair_energy_tensors(pos: &[f64; 6], #[nodiff] k: f64) -> f64 {
        let n = pos.len() / 2;
        let mut e = 0.0;
        for i in 0..n {
            for j in i + 1..n {
                let dx = pos[2 * i] - pos[2 * j];
                let dy = pos[2 * i + 1] - pos[2 * j + 1];
                let r = (dx * dx + dy * dy).sqrt();
                e += k * (r - 1.0).powi(2) + 1.0 / r;
            }
        }
        e
    }
}

twins! {
    /// Iterator chains over an `f32` array, and a branch on one of its elements.
    fn chains / chains_tensors(c: [f32; 3]) -> f32 {
        let weighted: f32 = c.iter().enumerate().map(|(i, v)| v * (i as f32 + 1.0)).sum();
        let squares = c.iter().fold(0.0, |acc, v| acc + v * v);
        let mut product = 1.0;
        for v in &c {
            product *= v.sin();
        }
        if c[0] > 0.0 {
            weighted + squares + product
        } else {
            weighted - squares
        }
    }
}

twins! {
    /// An array beside a number.
    fn trajectory / trajectory_tensors(p: [f64; 2], t: f64) -> f64 {
        let y = p[0] * (-p[1] * t).exp();
        y * y + t
    }
}

twins! {
    /// `max`, `min` and `clamp` of numbers, as methods and as `f64::` functions: a capped hinge.
    fn hinge / hinge_tensors(x: f64, y: f64) -> f64 {
        let margin = (1.0 - x * y).max(0.0);
        let capped = margin.min(2.0) + f64::max(x, y) * 0.5;
        capped * capped + f64::sin(x).clamp(-0.5, 0.5)
    }
}

twins! {
    /// `max` against a constant that may be NaN, which `f64::max` ignores.
    fn floor_at / floor_at_tensors(x: f64, #[nodiff] floor: f64) -> f64 {
        x.max(floor) * 2.0
    }
}

/// Helpers of arrays: one borrowing its array, one taking two by value.
#[differentiable]
fn norm2(x: &[f64; 3]) -> f64 {
    x[0] * x[0] + x[1] * x[1] + x[2] * x[2]
}

#[differentiable]
fn dot(x: [f64; 3], y: [f64; 3]) -> f64 {
    x.iter().zip(y.iter()).map(|(a, b)| a * b).sum()
}

twins! {
    /// An array passed whole to helpers, and to a method of a constant receiver.
    fn potential / potential_tensors(x: [f64; 3], #[nodiff] well: &Well) -> f64 {
        norm2(&x) * 0.5 + dot(x, x).sqrt() + well.depth(&x)
    }
}

/// A constant with a method of an array.
struct Well {
    center: [f64; 3],
}

#[differentiable]
impl Well {
    fn depth(#[nodiff] &self, x: &[f64; 3]) -> f64 {
        let mut d = 0.0;
        for (v, c) in x.iter().zip(self.center.iter()) {
            d += (v - c).powi(2);
        }
        -(-d).exp()
    }
}

/// A helper of numbers.
#[differentiable]
fn logistic(x: f64, r: f64) -> f64 {
    r * x * (1.0 - x)
}

/// A helper taking a number and a constant.
#[differentiable]
fn scaled_square(v: f64, #[nodiff] k: f64) -> f64 {
    v * v * k
}

/// A helper taking a number by reference.
#[differentiable]
fn cube(v: &f64) -> f64 {
    *v * *v * *v
}

twins! {
    /// A helper taking its number by reference, called from numbers and from 0-d tensors.
    fn by_reference / by_reference_tensors(a: f64, b: f64) -> f64 {
        cube(&a) * b
    }
}

/// A function of numbers that calls itself.
#[differentiable]
fn power(x: f64, #[nodiff] n: u32) -> f64 {
    if n == 1 {
        x
    } else {
        x * power(x, n - 1)
    }
}

/// Methods of numbers on a constant receiver, calling each other.
struct Spring {
    k: f64,
}

#[differentiable]
impl Spring {
    fn energy(#[nodiff] &self, x: f64) -> f64 {
        self.k * x * x * 0.5
    }

    fn total(#[nodiff] &self, x: f64, y: f64) -> f64 {
        self.energy(x) + Self::wave(y)
    }

    fn wave(y: f64) -> f64 {
        y.sin()
    }
}

/// A polynomial whose coefficients are a `Vec` field of a constant receiver.
struct Polynomial {
    coeffs: Vec<f64>,
}

#[differentiable]
impl Polynomial {
    /// Horner's rule over the coefficients, highest first, times a differentiated scale.
    fn eval(#[nodiff] &self, x: f64, scale: f64) -> f64 {
        let mut acc = 0.0;
        for c in self.coeffs.iter().rev() {
            acc = acc * x + c;
        }
        acc * scale
    }
}

twins! {
    /// A loop of calls of helpers.
    fn helped / helped_tensors(a: f64, b: f64, #[nodiff] n: usize) -> f64 {
        let mut x = a;
        for _ in 0..n {
            x += 0.1 * logistic(x, b);
        }
        x * scaled_square(b, 0.5) + power(a, 3)
    }
}

twins! {
    /// A function of `f32` numbers.
    fn single / single_tensors(x: f32, y: f32) -> f32 {
        let mut s = 0.0;
        for k in 0..4 {
            s += (x * k as f32 - y).tanh() * x;
        }
        s
    }
}

twins! {
    /// A `#[nodiff]` tensor of one element, read through `.item()`.
    fn scaled / scaled_tensors(x: f64, #[nodiff] t: &Tensor<f64>) -> f64 {
        (t * x.sin()).item()
    }
}

/// Central differences of `f` at `x`, one parameter at a time.
fn differences(f: &dyn Fn(&[f64]) -> f64, x: &[f64], h: f64) -> Vec<f64> {
    (0..x.len())
        .map(|i| {
            let (mut up, mut down) = (x.to_vec(), x.to_vec());
            up[i] += h;
            down[i] -= h;
            (f(&up) - f(&down)) / (2.0 * h)
        })
        .collect()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * b.abs().max(1.0)
}

/// A value and a gradient.
type WithGrad = (f64, Vec<f64>);

/// A value and a tangent from parameters and their tangents.
type Jvp<'a> = &'a dyn Fn(&[f64], &[f64]) -> (f64, f64);

/// The variants of a function of numbers, as functions of a parameter vector.
struct Variants<'a> {
    f: &'a dyn Fn(&[f64]) -> f64,
    grad: &'a dyn Fn(&[f64]) -> Vec<f64>,
    value_and_grad: &'a dyn Fn(&[f64]) -> WithGrad,
    vjp: &'a dyn Fn(&[f64], f64) -> WithGrad,
    pullback: &'a dyn Fn(&[f64], f64) -> WithGrad,
    jvp: Jvp<'a>,
}

impl Variants<'_> {
    /// Every variant at `x`: against central differences (`fd_tol`), against each other, and
    /// against the twin on tensors (`twin`), to rounding (`eps`, relative).
    fn check(&self, twin: &Variants, x: &[f64], h: f64, fd_tol: f64, eps: f64) {
        let value = (self.f)(x);
        assert_eq!(value.to_bits(), (twin.f)(x).to_bits(), "the twins' values");
        let g = (self.grad)(x);
        let twin_g = (twin.grad)(x);
        for (a, b) in g.iter().zip(&twin_g) {
            assert!(
                close(*a, *b, eps),
                "the twins' gradients: {g:?} and {twin_g:?}"
            );
        }
        let fd = differences(self.f, x, h);
        for (a, b) in g.iter().zip(&fd) {
            assert!(
                close(*a, *b, fd_tol),
                "gradient {g:?} against differences {fd:?}"
            );
        }
        let (v, g2) = (self.value_and_grad)(x);
        assert_eq!((v, &g2), (value, &g));
        // The dot-product test: <J u, w> = <u, J^T w>.
        let (u, w) = (
            (0..x.len())
                .map(|i| 0.3 - 0.7 * i as f64)
                .collect::<Vec<_>>(),
            -1.7,
        );
        let (v, ju) = (self.jvp)(x, &u);
        assert_eq!(v, value);
        for vjp in [self.vjp, self.pullback] {
            let (v, jtw) = vjp(x, w);
            assert_eq!(v, value);
            let lhs = ju * w;
            let rhs: f64 = u.iter().zip(&jtw).map(|(a, b)| a * b).sum();
            assert!(close(lhs, rhs, eps), "<Ju, w> = {lhs}, <u, J^T w> = {rhs}");
        }
        let (_, twin_ju) = (twin.jvp)(x, &u);
        assert!(
            close(ju, twin_ju, eps),
            "the twins' tangents: {ju} and {twin_ju}"
        );
    }
}

/// Gradients as `f64`s: one number, or a tuple of them.
trait Grads {
    fn into_vec(self) -> Vec<f64>;
}

impl Grads for f64 {
    fn into_vec(self) -> Vec<f64> {
        vec![self]
    }
}

impl Grads for (f64, f64) {
    fn into_vec(self) -> Vec<f64> {
        vec![self.0, self.1]
    }
}

impl Grads for (f32, f32) {
    fn into_vec(self) -> Vec<f64> {
        vec![self.0.into(), self.1.into()]
    }
}

impl Grads for (f64, f64, f64) {
    fn into_vec(self) -> Vec<f64> {
        vec![self.0, self.1, self.2]
    }
}

/// The [`Variants`] of a function of numbers `$f` (with its entry points `$f_grad`, ..) of the
/// parameters `[$p..]` of type `$ty`, called with the constants `$c..` after them.
macro_rules! variants {
    ($f:ident, $grad:ident, $vg:ident, $vjp:ident, $pullback:ident, $jvp:ident;
     $ty:ty; [$($p:ident),+]; ($($c:expr),*)) => {
        Variants {
            f: &|x: &[f64]| {
                let [$($p),+] = x.try_into().expect("the parameters");
                $f($($p as $ty,)+ $($c),*) as f64
            },
            grad: &|x: &[f64]| {
                let [$($p),+] = x.try_into().expect("the parameters");
                $grad($($p as $ty,)+ $($c),*).into_vec()
            },
            value_and_grad: &|x: &[f64]| {
                let [$($p),+] = x.try_into().expect("the parameters");
                let (v, g) = $vg($($p as $ty,)+ $($c),*);
                (v as f64, g.into_vec())
            },
            vjp: &|x: &[f64], w: f64| {
                let [$($p),+] = x.try_into().expect("the parameters");
                let (v, g) = $vjp($($p as $ty,)+ $($c,)* &(w as $ty));
                (v as f64, g.into_vec())
            },
            pullback: &|x: &[f64], w: f64| {
                let [$($p),+] = x.try_into().expect("the parameters");
                let (v, pullback) = $pullback($($p as $ty,)+ $($c),*);
                (v as f64, pullback(&(w as $ty)).into_vec())
            },
            jvp: &|x: &[f64], u: &[f64]| {
                let [$($p),+] = x.try_into().expect("the parameters");
                let mut u = u.iter().map(|&t| t as $ty);
                $( let $p = ($p as $ty, u.next().expect("a tangent")); )+
                let (v, t) = $jvp($($p.0,)+ $($c,)* $(&$p.1),+);
                (v as f64, t as f64)
            },
        }
    };
}

/// `f64`s as the element type of a function of numbers.
trait Narrow: Copy + Into<f64> {
    fn narrow(x: f64) -> Self;
}

impl Narrow for f64 {
    fn narrow(x: f64) -> Self {
        x
    }
}

impl Narrow for f32 {
    fn narrow(x: f64) -> Self {
        x as f32
    }
}

/// A parameter vector as an array parameter.
fn array<T: Narrow, const N: usize>(x: &[f64]) -> [T; N] {
    std::array::from_fn(|i| T::narrow(x[i]))
}

/// An array's gradient as `f64`s.
fn widen<T: Narrow, const N: usize>(g: &[T; N]) -> Vec<f64> {
    g.iter().map(|&v| v.into()).collect()
}

/// The [`Variants`] of a function of numbers `$f` of one array parameter of element type `$ty`,
/// passed by value (`[]`) or borrowed (`[&]`), called with the constants `$c..` after it.
macro_rules! array_variants {
    ($f:ident, $grad:ident, $vg:ident, $vjp:ident, $pullback:ident, $jvp:ident;
     $ty:ty; [$($amp:tt)?]; ($($c:expr),*)) => {
        Variants {
            f: &|x: &[f64]| $f($($amp)? array::<$ty, _>(x), $($c),*).into(),
            grad: &|x: &[f64]| widen(&$grad($($amp)? array::<$ty, _>(x), $($c),*)),
            value_and_grad: &|x: &[f64]| {
                let (v, g) = $vg($($amp)? array::<$ty, _>(x), $($c),*);
                (v.into(), widen(&g))
            },
            vjp: &|x: &[f64], w: f64| {
                let (v, g) = $vjp($($amp)? array::<$ty, _>(x), $($c,)* &<$ty>::narrow(w));
                (v.into(), widen(&g))
            },
            pullback: &|x: &[f64], w: f64| {
                let (v, pullback) = $pullback($($amp)? array::<$ty, _>(x), $($c),*);
                (v.into(), widen(&pullback(&<$ty>::narrow(w))))
            },
            jvp: &|x: &[f64], u: &[f64]| {
                let (v, t) = $jvp($($amp)? array::<$ty, _>(x), $($c,)* &array::<$ty, _>(u));
                (v.into(), t.into())
            },
        }
    };
}

#[test]
fn the_lorenz_system_as_numbers() {
    let numbers = variants!(lorenz, lorenz_grad, lorenz_value_and_grad, lorenz_vjp,
        lorenz_pullback, lorenz_jvp; f64; [s, r, b]; (300));
    let tensors = variants!(lorenz_tensors, lorenz_tensors_grad, lorenz_tensors_value_and_grad,
        lorenz_tensors_vjp, lorenz_tensors_pullback, lorenz_tensors_jvp; f64; [s, r, b]; (300));
    numbers.check(&tensors, &[10.0, 28.0, 8.0 / 3.0], 1e-6, 1e-6, 1e-12);
}

#[test]
fn straight_line_code_as_numbers() {
    let numbers = variants!(mixed, mixed_grad, mixed_value_and_grad, mixed_vjp, mixed_pullback,
        mixed_jvp; f64; [x, y]; ());
    let tensors = variants!(mixed_tensors, mixed_tensors_grad, mixed_tensors_value_and_grad,
        mixed_tensors_vjp, mixed_tensors_pullback, mixed_tensors_jvp; f64; [x, y]; ());
    numbers.check(&tensors, &[0.7, 1.9], 1e-6, 1e-7, 1e-12);
    numbers.check(&tensors, &[-0.4, 0.3], 1e-6, 1e-7, 1e-12);
    // By hand at one point: d/dx of 1 / (1 + e^{-xy}) is y σ (1 - σ), the rest checked above.
    let (x, y) = (0.7f64, 1.9f64);
    let a = x.exp() * y.ln() + x.powi(3) - y.powf(1.5);
    let b = x.tanh() + x.atan2(y) + x.hypot(y) + x.abs().sqrt() + (-y).sin().cos();
    assert_eq!(mixed(x, y), a / b + 1.0 / (1.0 + (-x * y).exp()));
}

#[test]
fn early_exits_as_numbers() {
    for n in [0, 1, 5, 12] {
        let numbers = variants!(early, early_grad, early_value_and_grad, early_vjp,
            early_pullback, early_jvp; f64; [x, y]; (n));
        let tensors = variants!(early_tensors, early_tensors_grad, early_tensors_value_and_grad,
            early_tensors_vjp, early_tensors_pullback, early_tensors_jvp; f64; [x, y]; (n));
        numbers.check(&tensors, &[0.8, -1.3], 1e-6, 1e-7, 1e-12);
    }
}

#[test]
fn comparisons_of_numbers_decide_branches() {
    let numbers = variants!(piecewise, piecewise_grad, piecewise_value_and_grad, piecewise_vjp,
        piecewise_pullback, piecewise_jvp; f64; [x, y]; ());
    let tensors = variants!(piecewise_tensors, piecewise_tensors_grad,
        piecewise_tensors_value_and_grad, piecewise_tensors_vjp, piecewise_tensors_pullback,
        piecewise_tensors_jvp; f64; [x, y]; ());
    for at in [[1.3, 0.8], [0.4, 2.0], [2.0, 1.0]] {
        numbers.check(&tensors, &at, 1e-6, 1e-6, 1e-12);
    }
    for n in [0, 3, 5, 9] {
        let numbers = variants!(returns, returns_grad, returns_value_and_grad, returns_vjp,
            returns_pullback, returns_jvp; f64; [x, y]; (n));
        let tensors = variants!(returns_tensors, returns_tensors_grad,
            returns_tensors_value_and_grad, returns_tensors_vjp, returns_tensors_pullback,
            returns_tensors_jvp; f64; [x, y]; (n));
        numbers.check(&tensors, &[0.5, 1.1], 1e-6, 1e-7, 1e-12);
    }
    // By hand with one step: r = (0.9 x + 0.1) y, value r - x: d/dx = 0.9 y - 1.
    assert_eq!(returns_grad(0.5, 1.1, 1).0, 0.9 * 1.1 - 1.0);
    // By hand at x = 2, y = 1: r = 2, then r -> 1.5 r + 1 three times (4, 7, 11.5), and
    // 11.5 < 12: the value is 11.5 x = 23. dr/dx = 1.5^3 y = 3.375, so d/dx = 3.375 x + 11.5.
    assert_eq!(piecewise(2.0, 1.0), 23.0);
    assert_eq!(piecewise_grad(2.0, 1.0).0, 3.375 * 2.0 + 11.5);
}

#[test]
fn functions_of_numbers_call_functions_of_numbers() {
    for n in [0, 1, 6] {
        let numbers = variants!(helped, helped_grad, helped_value_and_grad, helped_vjp,
            helped_pullback, helped_jvp; f64; [a, b]; (n));
        let tensors = variants!(helped_tensors, helped_tensors_grad,
            helped_tensors_value_and_grad, helped_tensors_vjp, helped_tensors_pullback,
            helped_tensors_jvp; f64; [a, b]; (n));
        numbers.check(&tensors, &[0.3, 2.5], 1e-6, 1e-7, 1e-12);
    }
    // By hand with no step: a b² / 2 + a³.
    let (a, b) = (0.3, 2.5);
    assert_eq!(helped_grad(a, b, 0), (b * b / 2.0 + 3.0 * a * a, a * b));
    // Calls of functions that make no tensor make none either (the recursive `power` keeps
    // its pullbacks behind reference counts, so it is left out here).
    check_allocations(allocations(|| logistic_grad(a, b)).1, |n| n == 0);
    let (_, pullback) = scaled_square_pullback(b, 0.5);
    check_allocations(allocations(|| pullback(&1.0)).1, |n| n == 0);
    // By reference: d/da of a³ b is 3 a² b, d/db is a³.
    let (value, grads) = allocations(|| by_reference_value_and_grad(a, b)).0;
    assert_eq!(value, a * a * a * b);
    assert!(close(grads.0, 3.0 * a * a * b, 1e-15) && close(grads.1, a * a * a, 1e-15));
    check_allocations(allocations(|| by_reference_grad(a, b)).1, |n| n == 0);
    assert_eq!(by_reference_tensors_value_and_grad(a, b), (value, grads));
    assert!(close(by_reference_jvp(a, b, &1.0, &0.0).1, grads.0, 1e-15));
}

#[test]
fn methods_of_numbers() {
    let s = Spring { k: 2.0 };
    let (x, y) = (1.5, 0.3);
    // E = k x² / 2 + sin y: dE/dx = k x, dE/dy = cos y.
    let ((value, grads), count) = allocations(|| s.total_value_and_grad(x, y));
    check_allocations(count, |n| n == 0);
    assert_eq!(value, s.total(x, y));
    assert_eq!(grads, (2.0 * x, y.cos()));
    let (_, t) = s.total_jvp(x, y, &1.0, &2.0);
    assert!(close(t, 2.0 * x + 2.0 * y.cos(), 1e-15));
}

#[test]
fn a_loop_over_a_vec_field_of_constants() {
    // p(x) = 1 - 2x + 0.5x³: p'(x) = -2 + 1.5x².
    let p = Polynomial {
        coeffs: vec![1.0, -2.0, 0.0, 0.5],
    };
    let (x, scale) = (1.3, 0.7);
    let value = 1.0 - 2.0 * x + 0.5 * x * x * x;
    // Written on numbers: the loop's stacks allocate, no op does (0-d tensors would make
    // several an iteration).
    let ((v, (gx, gs)), count) = allocations(|| p.eval_value_and_grad(x, scale));
    check_allocations(count, |n| n <= 4);
    assert!(close(v, value * scale, 1e-15));
    assert!(close(gx, (-2.0 + 1.5 * x * x) * scale, 1e-14));
    assert!(close(gs, value, 1e-15));
    let fd = differences(&|a: &[f64]| p.eval(a[0], a[1]), &[x, scale], 1e-6);
    assert!(close(gx, fd[0], 1e-8) && close(gs, fd[1], 1e-8));
    let (_, t) = p.eval_jvp(x, scale, &1.0, &-1.0);
    assert!(close(t, gx - gs, 1e-14));
}

#[test]
fn numbers_of_type_f32() {
    let numbers = variants!(single, single_grad, single_value_and_grad, single_vjp,
        single_pullback, single_jvp; f32; [x, y]; ());
    let tensors = variants!(single_tensors, single_tensors_grad, single_tensors_value_and_grad,
        single_tensors_vjp, single_tensors_pullback, single_tensors_jvp; f32; [x, y]; ());
    numbers.check(&tensors, &[0.6, 0.25], 1e-2, 2e-3, 1e-5);
    // By hand: d/dy of Σ_k tanh(k x - y) x is -x Σ_k (1 - tanh²(k x - y)).
    let (x, y) = (0.6f32, 0.25f32);
    let want: f32 = (0..4)
        .map(|k| -x * (1.0 - (k as f32 * x - y).tanh().powi(2)))
        .sum();
    assert!((single_grad(x, y).1 - want).abs() < 1e-6);
}

#[test]
fn a_tensor_of_one_element_beside_numbers() {
    let t = Tensor::from_vec(vec![2.5], &[1, 1]);
    let numbers = variants!(scaled, scaled_grad, scaled_value_and_grad, scaled_vjp,
        scaled_pullback, scaled_jvp; f64; [x]; (&t));
    let tensors = variants!(scaled_tensors, scaled_tensors_grad, scaled_tensors_value_and_grad,
        scaled_tensors_vjp, scaled_tensors_pullback, scaled_tensors_jvp; f64; [x]; (&t));
    numbers.check(&tensors, &[0.4], 1e-6, 1e-8, 1e-12);
    assert_eq!(scaled_grad(0.4, &t), 2.5 * 0.4f64.cos());
}

#[test]
#[should_panic(expected = "shape [3]")]
fn a_tensor_of_three_elements_beside_numbers_is_an_error() {
    // Where values are checked (`check-values`), the function as written runs first and its
    // `.item()` fails; elsewhere the function of numbers fails reading the tensor as a number.
    scaled_grad(0.4, &Tensor::from_vec(vec![1.0, 2.0, 3.0], &[3]));
}

#[test]
fn max_and_min_of_numbers_are_f64s() {
    let numbers = variants!(hinge, hinge_grad, hinge_value_and_grad, hinge_vjp, hinge_pullback,
        hinge_jvp; f64; [x, y]; ());
    let tensors = variants!(hinge_tensors, hinge_tensors_grad, hinge_tensors_value_and_grad,
        hinge_tensors_vjp, hinge_tensors_pullback, hinge_tensors_jvp; f64; [x, y]; ());
    for at in [[0.3, 0.8], [2.0, 1.5], [-1.5, 2.0]] {
        numbers.check(&tensors, &at, 1e-6, 1e-7, 1e-12);
    }
    // By hand at (0.3, 0.8): margin 1 - xy = 0.76, capped 0.76 + y/2 = 1.16, sin x inside the
    // clamp: d/dx = 2 capped (-y) + cos x, d/dy = 2 capped (-x + 1/2).
    let (x, y) = (0.3f64, 0.8f64);
    let capped = 1.0 - x * y + y * 0.5;
    let (gx, gy) = hinge_grad(x, y);
    assert!(close(gx, 2.0 * capped * -y + x.cos(), 1e-15));
    assert!(close(gy, 2.0 * capped * (0.5 - x), 1e-15));
    // Against NaN, `max` is the other side, with its whole derivative, as `f64::max` is.
    assert_eq!(floor_at_value_and_grad(1.5, f64::NAN), (3.0, 2.0));
    assert_eq!(floor_at_tensors_value_and_grad(1.5, f64::NAN), (3.0, 2.0));
    assert_eq!(floor_at_value_and_grad(1.5, 4.0), (8.0, 0.0));
    assert_eq!(floor_at_jvp(-1.0, f64::NAN, &1.0), (-2.0, 2.0));
}

#[test]
fn arrays_passed_to_helpers() {
    let well = Well {
        center: [0.5, 0.0, -1.0],
    };
    let numbers = array_variants!(potential, potential_grad, potential_value_and_grad,
        potential_vjp, potential_pullback, potential_jvp; f64; []; (&well));
    let tensors = array_variants!(potential_tensors, potential_tensors_grad,
        potential_tensors_value_and_grad, potential_tensors_vjp, potential_tensors_pullback,
        potential_tensors_jvp; f64; []; (&well));
    let x = [1.0, 2.0, -0.5];
    numbers.check(&tensors, &x, 1e-6, 1e-7, 1e-12);
    // By hand: |x|²/2 + |x| - e^{-|x - c|²} has gradient x + x/|x| + 2 (x - c) e^{-|x - c|²}.
    let r = (1.0f64 + 4.0 + 0.25).sqrt();
    let d2: f64 = (0..3).map(|i| (x[i] - well.center[i]).powi(2)).sum();
    let g = potential_grad(x, &well);
    for i in 0..3 {
        let want = x[i] + x[i] / r + 2.0 * (x[i] - well.center[i]) * (-d2).exp();
        assert!(close(g[i], want, 1e-14), "{g:?}");
    }
    // Written on numbers through the calls: forward mode allocates only where `depth` collects
    // the constant side of its `zip`; the reverse pass also the stacks of the loops in `dot`
    // and `depth`. The twin on tensors holds its 0-d tensors inline (no heap storage), so it
    // too allocates a few times a call, not once an op.
    let (_, forward) = allocations(|| potential_jvp(x, &well, &[1.0, 0.0, 0.0]));
    check_allocations(forward, |n| n <= 2);
    let (_, numbers) = allocations(|| potential_grad(x, &well));
    let (_, tensors) = allocations(|| potential_tensors_grad(x, &well));
    check_allocations(numbers, |n| n <= 12);
    check_allocations(tensors, |n| n <= 16);
}

#[test]
fn arrays_of_numbers() {
    let numbers = array_variants!(rosenbrock, rosenbrock_grad, rosenbrock_value_and_grad,
        rosenbrock_vjp, rosenbrock_pullback, rosenbrock_jvp; f64; []; ());
    let tensors = array_variants!(rosenbrock_tensors, rosenbrock_tensors_grad,
        rosenbrock_tensors_value_and_grad, rosenbrock_tensors_vjp, rosenbrock_tensors_pullback,
        rosenbrock_tensors_jvp; f64; []; ());
    numbers.check(&tensors, &[1.5, -0.5, 0.3, 2.0], 1e-6, 1e-7, 1e-12);
    // By hand: at the minimum (1, 1, 1, 1) the gradient is zero; at x the first element's
    // derivative is -400 x0 (x1 - x0²) - 2 (1 - x0) = 1650 + 1.
    assert_eq!(rosenbrock_grad([1.0; 4]), [0.0; 4]);
    assert_eq!(rosenbrock([1.5, -0.5, 0.3, 2.0]), 756.5 + 2.5 + 365.3);
    assert!(close(
        rosenbrock_grad([1.5, -0.5, 0.3, 2.0])[0],
        1651.0,
        1e-14
    ));

    let numbers = array_variants!(pair_energy, pair_energy_grad, pair_energy_value_and_grad,
        pair_energy_vjp, pair_energy_pullback, pair_energy_jvp; f64; [&]; (2.0));
    let tensors = array_variants!(pair_energy_tensors, pair_energy_tensors_grad,
        pair_energy_tensors_value_and_grad, pair_energy_tensors_vjp,
        pair_energy_tensors_pullback, pair_energy_tensors_jvp; f64; [&]; (2.0));
    let pos = [0.0, 0.0, 1.2, 0.1, 0.3, 0.9];
    numbers.check(&tensors, &pos, 1e-6, 1e-7, 1e-12);
    // The forces on the three particles add up to zero (the energy does not move with a
    // translation), in x and in y.
    let g = pair_energy_grad(&pos, 2.0);
    assert!((g[0] + g[2] + g[4]).abs() < 1e-14 && (g[1] + g[3] + g[5]).abs() < 1e-14);

    let numbers = array_variants!(chains, chains_grad, chains_value_and_grad, chains_vjp,
        chains_pullback, chains_jvp; f32; []; ());
    let tensors = array_variants!(chains_tensors, chains_tensors_grad,
        chains_tensors_value_and_grad, chains_tensors_vjp, chains_tensors_pullback,
        chains_tensors_jvp; f32; []; ());
    for at in [[0.5, -1.25, 2.0], [-0.5, 0.75, 1.5]] {
        numbers.check(&tensors, &at, 1e-2, 2e-3, 1e-5);
    }
    // By hand on the second branch: d/dc_i of Σ (i + 1) c_i - Σ c_i² is i + 1 - 2 c_i.
    assert_eq!(chains_grad([-0.5, 0.75, 1.5]), [2.0, 0.5, 0.0]);

    // An array beside a number: y = p0 e^{-p1 t}, value y² + t.
    let (p, t) = ([1.5f64, 0.4], 0.8f64);
    let y = p[0] * (-p[1] * t).exp();
    let want = (
        [2.0 * y * y / p[0], -2.0 * y * y * t],
        -2.0 * y * y * p[1] + 1.0,
    );
    for (got, twin) in [
        (trajectory_grad(p, t), trajectory_tensors_grad(p, t)),
        (
            trajectory_vjp(p, t, &1.0).1,
            trajectory_tensors_vjp(p, t, &1.0).1,
        ),
    ] {
        for (a, b) in [
            (got.0[0], want.0[0]),
            (got.0[1], want.0[1]),
            (got.1, want.1),
        ] {
            assert!(close(a, b, 1e-15), "{got:?} against {want:?}");
        }
        assert_eq!(got, twin);
    }
    let (_, tangent) = trajectory_jvp(p, t, &[1.0, 0.0], &2.0);
    assert!(close(tangent, want.0[0] + 2.0 * want.1, 1e-15));
}

#[test]
fn functions_of_numbers_make_no_tensor() {
    // Straight-line code: no allocation at all, in any variant.
    let (x, y) = (0.7, 1.9);
    check_allocations(allocations(|| mixed(x, y)).1, |n| n == 0);
    check_allocations(allocations(|| mixed_grad(x, y)).1, |n| n == 0);
    check_allocations(allocations(|| mixed_jvp(x, y, &1.0, &0.5)).1, |n| n == 0);
    let (_, pullback) = mixed_pullback(x, y);
    check_allocations(allocations(|| pullback(&2.0)).1, |n| n == 0);
    // Its twin on 0-d tensors holds them inline: a few allocations a call,
    // not one an op (it runs more than 50).
    check_allocations(allocations(|| mixed_tensors_grad(x, y)).1, |n| n <= 12);
    // A loop keeps what the backward pass reads on stacks of numbers, which grow by doubling:
    // a few allocations a stack, not a few an op.
    let (_, numbers) = allocations(|| lorenz_grad(10.0, 28.0, 8.0 / 3.0, 1000));
    let (_, tensors) = allocations(|| lorenz_tensors_grad(10.0, 28.0, 8.0 / 3.0, 1000));
    check_allocations(numbers, |n| n < 300);
    check_allocations(tensors, |n| n < 300);
    check_allocations(
        allocations(|| lorenz_jvp(10.0, 28.0, 8.0 / 3.0, 1000, &1.0, &0.0, &0.0)).1,
        |n| n == 0,
    );
    // Arrays: straight-line code allocates nothing; a loop only its stacks.
    let (p, t) = ([1.5, 0.4], 0.8);
    check_allocations(allocations(|| trajectory_grad(p, t)).1, |n| n == 0);
    check_allocations(
        allocations(|| trajectory_jvp(p, t, &[1.0, 0.0], &0.0)).1,
        |n| n == 0,
    );
    check_allocations(allocations(|| trajectory_tensors_grad(p, t)).1, |n| n <= 4);
    let x = [1.5, -0.5, 0.3, 2.0];
    let (_, numbers) = allocations(|| rosenbrock_grad(x));
    let (_, tensors) = allocations(|| rosenbrock_tensors_grad(x));
    check_allocations(numbers, |n| n < 40);
    check_allocations(tensors, |n| n < 40);
}
