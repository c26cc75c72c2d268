//! Every op of `#[differentiable]`'s op table, used inside a differentiated function and checked
//! through the generated `f_jvp` and `f_vjp` against central finite differences and the
//! dot-product test, for `f32` and `f64`; and to second order, through `f_hvp` of the function
//! weighed to a scalar, against central differences of its gradient and by the symmetry of the
//! Hessian, in `f64`. An op without an entry fails `every_op_of_the_table_is_exercised`, so a
//! new op cannot go without a second-order check either.
//!
//! Each entry of [`ops!`] below defines a module holding one `#[differentiable] fn f` (generic over
//! `T: Element`, or two concrete copies for `f32` and `f64`) and a test that checks it. The entry
//! also names the ops it exercises; `every_op_of_the_table_is_exercised` checks that together they
//! cover every differentiable op of the registry and that each named op really appears in its
//! entry's body.

use rune_ad::prelude::*;
use rune_ad::GradFn;

/// How a test input is drawn.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Standard normal.
    Normal,
    /// Uniform in [0.5, 2]: for `ln`, `sqrt`, `recip`, `powf`, denominators.
    Positive,
    /// Uniform in [-0.8, 0.8]: for `tan`.
    Small,
    /// Distinct values on the grid `0.3 k + 0.1`, shuffled: never within 0.1 of 0, and 0.3 apart,
    /// so kinks (`abs`, `relu`, `clamp`) and ties (`max`, pooling) stay further away than any
    /// finite-difference step.
    Spread,
    /// `Spread` moved by 0.15: at least 0.15 away from every `Spread` value (`maximum`).
    Shifted,
}

/// A test input of `shape` (the same numbers for every element type).
fn make<T: Element>(kind: Kind, shape: &[usize], seed: u64) -> Tensor<T> {
    let n: usize = shape.iter().product();
    let values: Vec<f64> = match kind {
        Kind::Normal => Tensor::<f64>::rand_normal(shape, 0.0, 1.0, seed).to_vec(),
        Kind::Positive => Tensor::<f64>::rand_uniform(shape, 0.5, 2.0, seed).to_vec(),
        Kind::Small => Tensor::<f64>::rand_uniform(shape, -0.8, 0.8, seed).to_vec(),
        Kind::Spread | Kind::Shifted => {
            let offset = if matches!(kind, Kind::Shifted) {
                0.25
            } else {
                0.1
            };
            let keys = Tensor::<f64>::rand_uniform(&[n], 0.0, 1.0, seed).to_vec();
            let mut order: Vec<usize> = (0..n).collect();
            order.sort_by(|&a, &b| keys[a].total_cmp(&keys[b]));
            order
                .into_iter()
                .map(|k| 0.3 * (k as f64 - (n / 2) as f64) + offset)
                .collect()
        }
    };
    Tensor::from_vec(values.into_iter().map(T::from_f64).collect(), shape)
}

/// The gradients of `f_vjp` as a list, in parameter order.
trait Grads<T: Element> {
    fn into_list(self) -> Vec<Tensor<T>>;
}

impl<T: Element> Grads<T> for Tensor<T> {
    fn into_list(self) -> Vec<Tensor<T>> {
        vec![self]
    }
}

impl<T: Element> Grads<T> for (Tensor<T>, Tensor<T>) {
    fn into_list(self) -> Vec<Tensor<T>> {
        vec![self.0, self.1]
    }
}

impl<T: Element> Grads<T> for (Tensor<T>, Tensor<T>, Tensor<T>) {
    fn into_list(self) -> Vec<Tensor<T>> {
        vec![self.0, self.1, self.2]
    }
}

/// The next argument from `it`, once per parameter `$p` (arguments evaluate left to right).
macro_rules! next_arg {
    ($p:ident, $it:ident) => {
        $it.next().expect("one tensor per parameter")
    };
}

/// Checks `$($path)::+::f` (and its `_jvp`, `_vjp`) at element type `$T` on fresh inputs.
macro_rules! check {
    ($T:ty, $($path:ident)::+, ($($p:ident : $kind:ident [$($d:expr),*]),+)) => {{
        let mut seed = 100;
        let args: Vec<Tensor<$T>> = vec![$({
            let _ = stringify!($p);
            seed += 1;
            make::<$T>(Kind::$kind, &[$($d),*], seed)
        }),+];
        let f = grad_fn(
            |a: &[Tensor<$T>]| {
                let mut ai = a.iter();
                $($path)::+::f($(next_arg!($p, ai)),+)
            },
            |a: &[Tensor<$T>], t: &[Tensor<$T>]| {
                let (mut ai, mut ti) = (a.iter(), t.iter());
                $($path)::+::f_jvp($(next_arg!($p, ai),)+ $(next_arg!($p, ti)),+).1
            },
            |a: &[Tensor<$T>], g: &Tensor<$T>| {
                let mut ai = a.iter();
                Grads::into_list($($path)::+::f_vjp($(next_arg!($p, ai),)+ g).1)
            },
        );
        // The generated functions return the original function's value.
        let value = f.value(&args);
        let mut ai = args.iter();
        let (v_vjp, _) = $($path)::+::f_vjp(
            $(next_arg!($p, ai),)+ &Tensor::ones(value.shape()));
        let (mut ai, mut ti) = (args.iter(), args.iter());
        let (v_jvp, _) = $($path)::+::f_jvp($(next_arg!($p, ai),)+ $(next_arg!($p, ti)),+);
        assert_eq!(value, v_vjp, "f_vjp's value");
        assert_eq!(value, v_jvp, "f_jvp's value");
        let tol = <$T as Element>::GRAD_TOL;
        if let Err(e) = check_grad(&f, &args, <$T as Element>::FD_EPS, tol, tol) {
            panic!("{} ({}): {e}", stringify!($($path)::+), stringify!($T));
        }
    }};
}

/// Checks the second derivatives of `$($path)::+::f` in f64 through `s = Σ f(..)·weights` (fixed
/// weights, so that every element of `f` counts): `s_hvp` against central differences of
/// `s_grad` along a random direction, and the symmetry ⟨u, H v⟩ = ⟨v, H u⟩ (`check_hvp`).
macro_rules! check_second_order {
    ($($path:ident)::+, ($($p:ident : $kind:ident [$($d:expr),*]),+)) => {{
        let mut seed = 100;
        let args: Vec<Tensor<f64>> = vec![$({
            let _ = stringify!($p);
            seed += 1;
            make::<f64>(Kind::$kind, &[$($d),*], seed)
        }),+];
        let mut ai = args.iter();
        let value = $($path)::+::f($(next_arg!($p, ai)),+);
        let weights = make::<f64>(Kind::Normal, value.shape(), 200);
        let grad = |a: &[Tensor<f64>]| {
            let mut ai = a.iter();
            Grads::into_list($($path)::+::s_grad($(next_arg!($p, ai),)+ &weights))
        };
        let hvp = |a: &[Tensor<f64>], v: &[Tensor<f64>]| {
            let (mut ai, mut vi) = (a.iter(), v.iter());
            let (g, hv) =
                $($path)::+::s_hvp($(next_arg!($p, ai),)+ &weights, $(next_arg!($p, vi)),+);
            // The gradient on dual numbers is `s_grad`'s up to rounding (products and
            // factorizations of dual numbers add in another order than the real kernels).
            for (g, want) in Grads::into_list(g).iter().zip(grad(a)) {
                for (g, want) in g.to_vec().into_iter().zip(want.to_vec()) {
                    assert!(
                        (g - want).abs() <= 1e-12 * (1.0 + want.abs()),
                        "s_hvp's gradient {g} is not s_grad's {want}"
                    );
                }
            }
            Grads::into_list(hv)
        };
        if let Err(e) = check_hvp(grad, hvp, &args, 1e-5, 1e-5, 1e-5) {
            panic!("{} (second order, f64): {e}", stringify!($($path)::+));
        }
    }};
}

/// One entry: a module with the function and a test checking it.
macro_rules! entry {
    // Generic over the element type: checked at f32 and f64, and to second order at f64.
    (gen $m:ident ($($p:ident : $kind:ident [$($d:expr),*]),+) {$($body:tt)*}) => {
        mod $m {
            use super::*;
            #[differentiable]
            pub fn f<T: Element>($($p: &Tensor<T>),+) -> Tensor<T> {
                $($body)*
            }
            /// `f` weighed to a scalar, for `f_hvp`.
            #[differentiable]
            pub fn s<T: Element>($($p: &Tensor<T>,)+ #[nodiff] weights: &Tensor<T>) -> Tensor<T> {
                (f($($p),+) * weights).sum()
            }
        }
        #[test]
        fn $m() {
            check!(f32, $m, ($($p : $kind [$($d),*]),+));
            check!(f64, $m, ($($p : $kind [$($d),*]),+));
            check_second_order!($m, ($($p : $kind [$($d),*]),+));
        }
    };
    // Generic, casting to a concrete element type: `f_hvp` is a compile error there
    // (`tests/ui/hvp/generic_cast.rs`), and the concrete twin's (`real`) is checked instead.
    (gen_no_hvp $m:ident ($($p:ident : $kind:ident [$($d:expr),*]),+) {$($body:tt)*}) => {
        mod $m {
            use super::*;
            #[differentiable]
            pub fn f<T: Element>($($p: &Tensor<T>),+) -> Tensor<T> {
                $($body)*
            }
        }
        #[test]
        fn $m() {
            check!(f32, $m, ($($p : $kind [$($d),*]),+));
            check!(f64, $m, ($($p : $kind [$($d),*]),+));
        }
    };
    // Two concrete copies, `Tensor<f32>` and `Tensor<f64>` (the body may name the type `E`).
    (real $m:ident ($($p:ident : $kind:ident [$($d:expr),*]),+) {$($body:tt)*}) => {
        mod $m {
            pub mod single {
                #![allow(dead_code)]
                use super::super::*;
                type E = f32;
                #[differentiable]
                pub fn f($($p: &Tensor<f32>),+) -> Tensor<f32> {
                    $($body)*
                }
            }
            pub mod double {
                #![allow(dead_code)]
                use super::super::*;
                type E = f64;
                // The element type as the body names it, so that the dual twin `f_hvp` runs
                // sees casts to it.
                #[differentiable(hvp)]
                pub fn f($($p: &Tensor<E>),+) -> Tensor<E> {
                    $($body)*
                }
                /// `f` weighed to a scalar, for `f_hvp`.
                #[differentiable(hvp)]
                pub fn s($($p: &Tensor<E>,)+ #[nodiff] weights: &Tensor<E>) -> Tensor<E> {
                    (f($($p),+) * weights).sum()
                }
            }
        }
        #[test]
        fn $m() {
            check!(f32, $m::single, ($($p : $kind [$($d),*]),+));
            check!(f64, $m::double, ($($p : $kind [$($d),*]),+));
            check_second_order!($m::double, ($($p : $kind [$($d),*]),+));
        }
    };
}

/// The entries, and `ENTRIES`: for each, the ops it names and its body as text.
macro_rules! ops {
    ($($mode:ident $m:ident [$($op:literal),+] ($($params:tt)*) {$($body:tt)*})*) => {
        $(entry!($mode $m ($($params)*) {$($body)*});)*
        const ENTRIES: &[(&str, &[&str], &str)] =
            &[$((stringify!($m), &[$($op),+], stringify!($($body)*))),*];
    };
}

ops! {
    // ---- unary --------------------------------------------------------------------------------
    gen exp ["exp"] (x: Normal[2, 3]) { x.exp() }
    gen ln ["ln"] (x: Positive[2, 3]) { x.ln() }
    gen log2 ["log2"] (x: Positive[2, 3]) { x.log2() }
    gen exp2 ["exp2"] (x: Normal[2, 3]) { x.exp2() }
    gen log1p ["log1p"] (x: Positive[2, 3]) { x.log1p() }
    gen sin ["sin"] (x: Normal[2, 3]) { x.sin() }
    gen cos ["cos"] (x: Normal[2, 3]) { x.cos() }
    gen tan ["tan"] (x: Small[2, 3]) { x.tan() }
    gen tanh ["tanh"] (x: Normal[2, 3]) { x.tanh() }
    gen sigmoid ["sigmoid"] (x: Normal[2, 3]) { x.sigmoid() }
    gen relu ["relu"] (x: Spread[2, 3]) { x.relu() }
    gen sqrt ["sqrt"] (x: Positive[2, 3]) { x.sqrt() }
    gen cbrt ["cbrt"] (x: Normal[2, 3]) { x.cbrt() }
    gen silu ["silu"] (x: Normal[2, 3]) { x.silu() }
    gen gelu ["gelu"] (x: Normal[2, 3]) { x.gelu() }
    gen gelu_tanh ["gelu_tanh"] (x: Normal[2, 3]) { x.gelu_tanh() }
    gen recip ["recip"] (x: Positive[2, 3]) { x.recip() }
    gen abs ["abs"] (x: Spread[2, 3]) { x.abs() }
    gen square ["square"] (x: Normal[2, 3]) { x.square() }
    gen softplus ["softplus"] (x: Normal[2, 3]) { x.softplus() }
    gen expm1 ["expm1"] (x: Normal[2, 3]) { x.expm1() }
    gen log_sigmoid ["log_sigmoid"] (x: Normal[2, 3]) { x.log_sigmoid() }
    gen erf ["erf"] (x: Normal[2, 3]) { x.erf() }
    gen erfc ["erfc"] (x: Normal[2, 3]) { x.erfc() }
    gen erfinv ["erfinv"] (x: Small[2, 3]) { x.erfinv() }
    gen lgamma ["lgamma"] (x: Positive[2, 3]) { x.lgamma() }
    gen digamma ["digamma"] (x: Positive[2, 3]) { x.digamma() }
    gen sinh ["sinh"] (x: Normal[2, 3]) { x.sinh() }
    gen cosh ["cosh"] (x: Normal[2, 3]) { x.cosh() }
    gen asinh ["asinh"] (x: Normal[2, 3]) { x.asinh() }
    gen acosh ["acosh"] (x: Positive[2, 3]) { (x + 1.0).acosh() }
    gen atanh ["atanh"] (x: Small[2, 3]) { x.atanh() }
    gen asin ["asin"] (x: Small[2, 3]) { x.asin() }
    gen acos ["acos"] (x: Small[2, 3]) { x.acos() }
    gen atan ["atan"] (x: Normal[2, 3]) { x.atan() }
    gen piecewise_constant ["sign", "floor", "ceil", "round", "mul"] (x: Shifted[2, 3]) {
        x.sign() * x.floor() + x.ceil() * x.round() * x
    }
    gen round_ties_even ["round_ties_even", "mul"] (x: Shifted[2, 3]) { x.round_ties_even() * x }
    gen signum ["signum", "mul"] (x: Shifted[2, 3]) { x.signum() * x }
    gen unary_chain ["exp", "sin", "square"] (x: Normal[4]) { x.sin().exp().square() }
    real exp_real ["exp"] (x: Normal[2, 3]) { x.exp() }

    // ---- arithmetic ---------------------------------------------------------------------------
    gen add_same ["add"] (x: Normal[2, 3], y: Normal[2, 3]) { x + y }
    gen add_broadcast ["add"] (x: Normal[2, 3], y: Normal[3]) { x + y }
    gen add_outer ["add"] (x: Normal[2, 1], y: Normal[1, 3]) { x + y }
    gen sub_broadcast ["sub"] (x: Normal[3], y: Normal[2, 3]) { x - y }
    gen sub_scalar_shape ["sub"] (x: Normal[], y: Normal[2, 2]) { x - y }
    gen mul_broadcast ["mul"] (x: Normal[2, 3, 1], y: Normal[4]) { x * y }
    gen mul_self ["mul", "add"] (x: Normal[2, 3]) { x * x + x }
    gen div_broadcast ["div"] (x: Normal[2, 3], y: Positive[2, 1]) { x / y }
    gen div_self ["div", "exp"] (x: Positive[5]) { x / x.exp() }
    gen add_tensor_scalar ["add"] (x: Normal[2, 3]) { x + T::from_f64(1.5) }
    gen sub_tensor_scalar ["sub"] (x: Normal[2, 3]) { x - T::from_f64(0.5) }
    gen mul_tensor_scalar ["mul"] (x: Normal[2, 3]) { x * T::from_f64(2.5) }
    gen div_tensor_scalar ["div"] (x: Normal[2, 3]) { x / T::from_f64(-1.5) }
    gen owned_operands ["add", "mul", "exp", "sin"] (x: Normal[2, 3]) { x.exp() * x.sin() + x.exp() }
    real add_scalar_tensor ["add"] (x: Normal[2, 3]) { 1.5 + x }
    real sub_scalar_tensor ["sub"] (x: Normal[2, 3]) { 0.5 - x }
    real mul_scalar_tensor ["mul"] (x: Normal[2, 3]) { 2.5 * x }
    real div_scalar_tensor ["div"] (x: Positive[2, 3]) { 2.0 / x }
    real scalar_both_sides ["add", "sub", "mul", "div"] (x: Positive[2, 3]) {
        (2.0 * x + 1.0) / (3.0 - x * 0.5)
    }
    gen neg ["neg"] (x: Normal[2, 3]) { -x }
    gen neg_of_product ["neg", "mul"] (x: Normal[2, 3], y: Normal[3]) { -(x * y) }

    // ---- elementwise with configuration or a second tensor ------------------------------------
    gen clamp ["clamp"] (x: Spread[2, 3]) { x.clamp(T::from_f64(-0.35), T::from_f64(0.55)) }
    gen powf ["powf"] (x: Positive[2, 3]) { x.powf(T::from_f64(2.5)) }
    gen powf_negative ["powf"] (x: Positive[2, 3]) { x.powf(T::from_f64(-1.5)) }
    real powf_real ["powf"] (x: Positive[2, 3]) { x.powf(1.5) }
    gen pow ["pow"] (x: Positive[2, 3], y: Normal[3]) { x.pow(y) }
    gen pow_outer ["pow"] (x: Positive[2, 1], y: Normal[1, 3]) { x.pow(y) }
    gen logaddexp ["logaddexp"] (x: Normal[2, 3], y: Normal[3]) { x.logaddexp(y) }
    gen xlogy ["xlogy"] (x: Normal[2, 3], y: Positive[3]) { x.xlogy(y) }
    gen xlog1py ["xlog1py"] (x: Normal[2, 1], y: Positive[1, 3]) { x.xlog1py(y) }
    gen atan2 ["atan2"] (x: Normal[2, 3], y: Positive[2, 3]) { x.atan2(y) }
    gen hypot ["hypot"] (x: Normal[2, 3], y: Positive[3]) { x.hypot(y) }
    gen powi ["powi"] (x: Normal[2, 3]) { x.powi(3) }
    gen powi_negative ["powi"] (x: Positive[2, 3]) { x.powi(-2) }
    gen dot ["dot"] (x: Normal[4], y: Normal[4]) { x.dot(y) }
    gen outer ["outer"] (x: Normal[4], y: Normal[3]) { x.outer(y) }
    gen polyval_at_points ["polyval"] (p: Normal[4], x: Normal[3, 2]) { polyval(p, x) }
    gen norm ["norm"] (x: Normal[2, 3]) { x.norm() }
    gen trace ["trace"] (x: Normal[3, 3]) { x.trace() }
    gen diagonal ["diagonal"] (x: Normal[2, 3, 4]) { x.diagonal() }
    gen diag ["diag"] (x: Normal[2, 3]) { x.diag() }
    gen triangles ["triu", "tril"] (x: Normal[3, 4]) { x.triu(1) * 2.0 + x.tril(-1) }
    gen cholesky ["cholesky", "matmul"] (x: Normal[2, 3, 3]) {
        (x.matmul(&x.t()) + Tensor::eye(3)).cholesky()
    }
    gen solve_triangular ["solve_triangular"] (a: Positive[3, 3], b: Normal[3, 2]) {
        a.solve_triangular(b, true, false) + a.solve_triangular(b, false, true)
    }
    gen solve ["solve"] (a: Normal[2, 3, 3], b: Normal[2, 3, 2]) { (a + Tensor::eye(3) * 4.0).solve(b) }
    gen inv ["inv"] (a: Normal[2, 3, 3]) { (a + Tensor::eye(3) * 4.0).inv() }
    gen determinants ["det", "logabsdet"] (a: Normal[3, 3]) {
        let m = a + Tensor::eye(3) * 4.0;
        m.det() * m.logabsdet()
    }
    gen cho_solve ["cho_solve"] (l: Positive[2, 3, 3], b: Normal[2, 3, 2]) { l.cho_solve(b) }
    gen sign_det ["sign_det", "logabsdet"] (a: Normal[3, 3]) {
        let m = a + Tensor::eye(3) * 4.0;
        m.sign_det() * m.logabsdet()
    }
    gen slogdet_tuple ["mul"] (a: Normal[2, 3, 3]) {
        let (sign, logdet) = (a - Tensor::eye(3) * 4.0).slogdet();
        sign * logdet
    }
    gen qr ["qr_q", "qr_r", "matmul"] (a: Normal[4, 3]) { a.qr_q().matmul(&a.qr_r().exp()) }
    gen qr_tuple ["add"] (a: Normal[2, 3, 3]) {
        let (q, r) = a.qr();
        q + r
    }
    gen eigh ["eigvalsh", "eigh_vectors", "matmul"] (a: Normal[3, 3]) {
        let s = a.matmul(&a.t());
        s.eigh_vectors() * s.eigvalsh()
    }
    gen eigh_tuple ["mul"] (a: Normal[2, 3, 3]) {
        let (w, v) = (a + a.t()).eigh();
        v * w.exp().expand_dims(-2)
    }
    gen svd ["svd_u", "svdvals", "svd_vh", "matmul"] (a: Normal[4, 3]) {
        a.svd_u().matmul(&a.svd_vh()) * a.svdvals().sum()
    }
    gen svd_tuple ["mul"] (a: Normal[2, 2, 3]) {
        let (u, s, vh) = a.svd();
        u.matmul(&(vh * s.square().expand_dims(-1)))
    }
    gen lstsq ["lstsq"] (a: Normal[2, 4, 3], b: Normal[2, 4, 2]) { a.lstsq(b) }
    gen solve_broadcast ["solve", "solve_triangular"] (a: Normal[3, 3], b: Normal[2, 1, 3, 2]) {
        let m = a + Tensor::eye(3) * 4.0;
        m.solve(b) + m.solve_triangular(b, true, false)
    }
    gen cho_solve_broadcast ["cho_solve"] (l: Positive[2, 1, 3, 3], b: Normal[4, 3, 2]) {
        l.cho_solve(b)
    }
    gen lstsq_broadcast ["lstsq"] (a: Normal[2, 4, 3], b: Normal[4, 2]) { a.lstsq(b) }
    gen qr_wide ["qr_q", "qr_r", "matmul"] (a: Normal[2, 2, 4]) {
        a.qr_q().matmul(&a.qr_r().exp())
    }
    gen einsum_batched ["einsum"] (a: Normal[2, 3, 4], b: Normal[4, 2]) { einsum("bij,jk->kbi", a, b) }
    gen einsum_inner ["einsum", "mul"] (a: Normal[3, 4]) { einsum("ij,ij->", a, &(a * 2.0)) }
    gen maximum ["maximum"] (x: Spread[2, 3], y: Shifted[3]) { x.maximum(y) }
    gen fmax_fmin ["fmax", "fmin"] (x: Spread[2, 3], y: Shifted[3]) { x.fmax(y) * x.fmin(y) }
    gen minimum ["minimum"] (x: Spread[2, 1], y: Shifted[1, 3]) { x.minimum(y) }
    real clip_by_scalars ["maximum", "minimum"] (x: Spread[2, 3]) { x.maximum(0.0).minimum(1.5) }
    gen selection_scalars ["maximum", "minimum", "mul"] (x: Spread[2, 3]) {
        x.maximum(T::zero()) * x.minimum(T::from_f64(0.45))
    }

    // ---- reductions ---------------------------------------------------------------------------
    gen sum ["sum"] (x: Normal[2, 3, 4]) { x.sum() }
    gen sum_axes_keep ["sum_axes"] (x: Normal[2, 3, 4]) { x.sum_axes(&[0, -1], true) }
    gen sum_axes_drop ["sum_axes"] (x: Normal[2, 3, 4]) { x.sum_axes(&[-2], false) }
    gen sum_axes_all ["sum_axes"] (x: Normal[2, 3]) { x.sum_axes(&[0, 1], false) }
    gen mean ["mean"] (x: Normal[2, 3, 4]) { x.mean() }
    gen mean_axes_keep ["mean_axes"] (x: Normal[2, 3, 4]) { x.mean_axes(&[1], true) }
    gen mean_axes_drop ["mean_axes"] (x: Normal[2, 3, 4]) { x.mean_axes(&[-1, 0], false) }
    gen max ["max"] (x: Spread[2, 3, 4]) { x.max() }
    gen max_axes_keep ["max_axes"] (x: Spread[2, 3, 4]) { x.max_axes(&[0, 2], true) }
    gen max_axes_drop ["max_axes"] (x: Spread[2, 3, 4]) { x.max_axes(&[-1], false) }
    gen min ["min"] (x: Spread[2, 3, 4]) { x.min() }
    gen min_axes_keep ["min_axes"] (x: Spread[2, 3, 4]) { x.min_axes(&[1], true) }
    gen min_axes_drop ["min_axes"] (x: Spread[2, 3, 4]) { x.min_axes(&[-3], false) }
    gen prod ["prod"] (x: Spread[2, 3]) { x.prod() }
    gen prod_axes_keep ["prod_axes"] (x: Spread[2, 3, 2]) { x.prod_axes(&[-1], true) }
    gen prod_axes_drop ["prod_axes"] (x: Spread[2, 3, 2]) { x.prod_axes(&[0, -2], false) }
    gen logsumexp_all ["logsumexp"] (x: Normal[2, 3]) { x.logsumexp() }
    gen logsumexp_axes_keep ["logsumexp_axes"] (x: Normal[2, 3, 4]) { x.logsumexp_axes(&[0, 1], true) }
    gen logsumexp_axes_drop ["logsumexp_axes"] (x: Normal[2, 3, 4]) { x.logsumexp_axes(&[-1], false) }
    real mean_real ["mean_axes", "sum"] (x: Normal[3, 4]) { x.mean_axes(&[-1], false).sum() }

    // ---- softmax and scans --------------------------------------------------------------------
    gen softmax_last ["softmax"] (x: Normal[2, 3, 4]) { x.softmax(-1) }
    gen softmax_first ["softmax"] (x: Normal[3, 4]) { x.softmax(0) }
    gen log_softmax_middle ["log_softmax"] (x: Normal[2, 3, 4]) { x.log_softmax(1) }
    gen log_softmax_last ["log_softmax"] (x: Normal[3, 4]) { x.log_softmax(-1) }
    real softmax_real ["softmax", "mul"] (x: Normal[2, 5]) { x.softmax(-1) * 3.0 }
    gen cumsum_first ["cumsum"] (x: Normal[3, 4]) { x.cumsum(0) }
    gen cumsum_last ["cumsum"] (x: Normal[2, 3, 4]) { x.cumsum(-1) }
    gen cumprod_middle ["cumprod"] (x: Spread[2, 4, 2]) { x.cumprod(1) }
    gen cumprod_negative ["cumprod"] (x: Spread[3, 4]) { x.cumprod(-2) }

    // ---- statistics and sorting ---------------------------------------------------------------
    gen var_all ["var"] (x: Normal[2, 3]) { x.var(0) }
    gen var_axes_keep ["var_axes"] (x: Normal[2, 3, 4]) { x.var_axes(&[0, -1], true, 1) }
    gen var_axes_drop ["var_axes"] (x: Normal[2, 3, 4]) { x.var_axes(&[1], false, 0) }
    gen std_all ["std"] (x: Normal[3, 4]) { x.std(1) }
    gen std_axes_keep ["std_axes"] (x: Normal[2, 3, 4]) { x.std_axes(&[-1], true, 0) }
    gen std_axes_drop ["std_axes"] (x: Normal[2, 3, 4]) { x.std_axes(&[0, 2], false, 1) }
    gen standardize ["mean_axes", "std_axes", "sub", "div"] (x: Normal[3, 5]) {
        (x - x.mean_axes(&[1], true)) / x.std_axes(&[1], true, 1)
    }
    real var_real ["var", "std", "add"] (x: Normal[4]) { x.var(1) + x.std(0) }
    gen logcumsumexp_last ["logcumsumexp"] (x: Normal[2, 3, 4]) { x.logcumsumexp(-1) }
    gen logcumsumexp_first ["logcumsumexp", "mul"] (x: Normal[3, 4]) { x.logcumsumexp(0) * 3.0 }
    gen sort_last ["sort"] (x: Spread[3, 4]) { x.sort(-1) }
    gen sort_first ["sort", "mul"] (x: Spread[4, 3]) { x.sort(0) * x }
    gen sort_and_argsort ["sort", "gather", "add"] (x: Spread[2, 5]) {
        x.sort(-1) + x.gather(-1, &x.argsort(-1).flip(&[1]))
    }
    gen ranges_as_constants ["mul", "sum_axes", "add"] (x: Normal[2, 5]) {
        let weights = Tensor::linspace(T::from_f64(-1.0), T::from_f64(1.0), 5);
        (x * weights + Tensor::<T>::arange(5)).sum_axes(&[1], false)
    }

    // ---- shape --------------------------------------------------------------------------------
    gen reshape ["reshape"] (x: Normal[2, 3, 4]) { x.reshape(&[4, 6]) }
    gen reshape_to_scalar ["reshape"] (x: Normal[1, 1]) { x.reshape(&[0usize; 0]) }
    gen permute ["permute"] (x: Normal[2, 3, 4]) { x.permute(&[2, 0, 1]) }
    gen t_2d ["t"] (x: Normal[2, 3]) { x.t() }
    gen t_batched ["t"] (x: Normal[2, 3, 4]) { x.t() }
    gen broadcast_to ["broadcast_to"] (x: Normal[3, 1]) { x.broadcast_to(&[2, 3, 4]) }
    gen expand_dims_last ["expand_dims"] (x: Normal[2, 3]) { x.expand_dims(-1) }
    gen expand_dims_first ["expand_dims"] (x: Normal[2, 3]) { x.expand_dims(0) }
    gen squeeze_middle ["squeeze"] (x: Normal[2, 1, 3]) { x.squeeze(1) }
    gen squeeze_last ["squeeze"] (x: Normal[2, 3, 1]) { x.squeeze(-1) }

    // ---- slicing ------------------------------------------------------------------------------
    gen shrink ["shrink"] (x: Normal[4, 5]) { x.shrink(&[(1, 3), (0, 4)]) }
    gen pad ["pad"] (x: Normal[2, 3]) { x.pad(&[(1, 0), (0, 2)], T::from_f64(0.5)) }
    gen flip ["flip"] (x: Normal[2, 3, 4]) { x.flip(&[0, 2]) }
    gen unfold ["unfold"] (x: Normal[1, 2, 4, 4]) { x.unfold(2, 1, 1, 0) }
    gen unfold_strided ["unfold"] (x: Normal[2, 1, 5, 5]) { x.unfold(3, 2, 1, 1) }
    gen unfold_dilated ["unfold"] (x: Normal[1, 1, 6, 6]) { x.unfold(2, 1, 2, 0) }
    gen fold ["fold"] (x: Normal[1, 8, 9]) { x.fold(&[4, 4], 2, 1, 1, 0) }
    gen fold_padded ["fold"] (x: Normal[2, 9, 4]) { x.fold(&[4, 4], 3, 2, 1, 1) }

    // ---- combining ----------------------------------------------------------------------------
    gen dual_tangent ["dual_of", "tangent_of"] (x: Normal[2, 3], y: Normal[2, 3]) {
        tangent_of(&dual_of(x, y).tanh())
    }
    gen dual_primal ["dual_of", "primal_of"] (x: Normal[2, 3], y: Normal[2, 3]) {
        primal_of(&(dual_of(x, y) * dual_of(y, x)).sin())
    }
    gen concat_last ["concat"] (x: Normal[2, 3], y: Normal[2, 2]) { concat(&[x, y], -1) }
    gen concat_three ["concat"] (x: Normal[1, 3], y: Normal[2, 3], z: Normal[1, 3]) {
        concat(&[x, y, z], 0)
    }
    gen concat_with_constant ["concat"] (x: Normal[2, 3]) {
        concat(&[x, &Tensor::ones(&[1, 3]), x], 0)
    }
    gen stack_middle ["stack"] (x: Normal[2, 3], y: Normal[2, 3], z: Normal[2, 3]) {
        stack(&[x, y, z], 1)
    }
    gen stack_last ["stack"] (x: Normal[2, 3], y: Normal[2, 3]) { stack(&[y, x], -1) }
    gen where_cond_select ["where_cond"] (x: Normal[2, 3], y: Normal[3]) {
        let mask = Tensor::from_vec(vec![true, false, true, false, false, true], &[2, 3]);
        where_cond(&mask, x, y)
    }
    gen where_cond_mask_broadcast ["where_cond"] (x: Normal[2, 3], y: Normal[2, 1]) {
        let mask = Tensor::from_vec(vec![true, false, true], &[3]);
        where_cond(&mask, y, x)
    }
    gen where_cond_computed_mask ["where_cond", "square"] (x: Spread[2, 3]) {
        where_cond(&x.gt(T::zero()), x, &x.square())
    }
    real where_cond_scalar ["where_cond", "mul"] (x: Spread[2, 3]) {
        where_cond(&x.lt(0.0 as E), x, &(x * 2.0))
    }

    // ---- indexing -----------------------------------------------------------------------------
    gen gather ["gather"] (x: Normal[3, 4]) {
        let idx = Tensor::from_vec(vec![0i64, 2, 1, 3, 3, 0], &[3, 2]);
        x.gather(1, &idx)
    }
    gen gather_repeated ["gather"] (x: Normal[3, 4]) {
        let idx = Tensor::from_vec(vec![2i64, 0, 2, 1, 2, 2, 0, 1], &[2, 4]);
        x.gather(-2, &idx)
    }
    gen scatter_add ["scatter_add"] (x: Normal[3, 4], u: Normal[2, 4]) {
        let idx = Tensor::from_vec(vec![2i64, 0, 2, 1, 2, 2, 0, 1], &[2, 4]);
        x.scatter_add(0, &idx, u)
    }
    gen scatter_add_into_constant ["scatter_add"] (u: Normal[3, 2]) {
        let idx = Tensor::from_vec(vec![0i64, 3, 3, 3, 1, 0], &[3, 2]);
        Tensor::ones(&[3, 4]).scatter_add(-1, &idx, u)
    }

    // ---- PyTorch's names ----------------------------------------------------------------------
    gen index_select ["index_select"] (x: Normal[4, 3]) { x.index_select(0, &[2, 0, 2, 3, 2]) }
    gen index_select_tensor ["index_select"] (x: Normal[2, 3, 4]) {
        let ids = Tensor::from_vec(vec![3i64, 3, 1], &[3]);
        x.index_select(-1, &ids)
    }
    gen embedding_rows ["embedding"] (w: Normal[4, 3]) {
        let ids = Tensor::from_vec(vec![3i64, 0, 3, 1, 3, 2], &[2, 3]);
        embedding(&ids, w)
    }
    gen masked_fill ["masked_fill"] (x: Normal[2, 3]) {
        let mask = Tensor::from_vec(vec![false, true, false], &[3]);
        x.masked_fill(&mask, 0.5)
    }
    gen masked_fill_computed_mask ["masked_fill", "mul"] (x: Spread[2, 3]) {
        x.masked_fill(&x.lt(T::zero()), -1.0) * x
    }
    gen transpose ["transpose"] (x: Normal[2, 3, 4]) { x.transpose(0, -1) }
    gen reshape_inferred ["reshape", "transpose"] (x: Normal[2, 3, 4]) {
        x.transpose(1, 2).reshape(&[-1, 3])
    }
    gen layer_norm ["layer_norm"] (x: Normal[3, 4]) { x.layer_norm(&[4], 1e-5) }
    gen layer_norm_affine ["layer_norm", "mul", "add"] (
        x: Normal[2, 3, 4], w: Normal[3, 4], b: Normal[4]
    ) {
        x.layer_norm(&[3, 4], 0.1) * w + b
    }

    // ---- linear algebra and nn ----------------------------------------------------------------
    gen matmul ["matmul"] (a: Normal[2, 3], b: Normal[3, 4]) { a.matmul(b) }
    gen matmul_batched_broadcast ["matmul"] (a: Normal[2, 1, 2, 3], b: Normal[3, 3, 4]) {
        a.matmul(b)
    }
    gen matmul_vector_matrix ["matmul"] (a: Normal[3], b: Normal[3, 4]) { a.matmul(b) }
    gen matmul_matrix_vector ["matmul"] (a: Normal[2, 3], b: Normal[3]) { a.matmul(b) }
    gen matmul_dot ["matmul"] (a: Normal[3], b: Normal[3]) { a.matmul(b) }
    gen matmul_constant_lhs ["matmul"] (b: Normal[3, 2]) {
        let a = Tensor::from_vec(vec![1.0, -2.0, 0.5, 3.0, 0.0, 1.0], &[2, 3]).cast::<T>();
        a.matmul(b)
    }
    real matmul_real ["matmul", "add"] (a: Normal[4, 3], b: Normal[3, 2], c: Normal[2]) {
        a.matmul(b) + c
    }
    gen conv2d ["conv2d"] (x: Normal[2, 2, 5, 5], w: Normal[3, 2, 3, 3]) { x.conv2d(w, 2, 1) }
    gen conv2d_valid ["conv2d"] (x: Normal[1, 1, 4, 4], w: Normal[2, 1, 2, 2]) { x.conv2d(w, 1, 0) }
    gen max_pool2d ["max_pool2d"] (x: Spread[1, 2, 4, 4]) { x.max_pool2d(2, 2) }
    gen max_pool2d_overlapping ["max_pool2d"] (x: Spread[2, 1, 4, 4]) { x.max_pool2d(3, 1) }
    gen avg_pool2d ["avg_pool2d"] (x: Normal[1, 2, 4, 4]) { x.avg_pool2d(2, 2) }
    gen avg_pool2d_overlapping ["avg_pool2d"] (x: Normal[2, 1, 5, 5]) { x.avg_pool2d(3, 1) }

    // ---- types --------------------------------------------------------------------------------
    gen_no_hvp cast_round_trip ["cast", "sin"] (x: Normal[2, 3]) { x.cast::<f64>().sin().cast::<T>() }
    real cast_real ["cast", "exp"] (x: Normal[2, 3]) { x.cast::<f64>().exp().cast::<E>() }
}

/// The ops the macro differentiates: the registry's differentiable ops (`rune-ops`, which the
/// macro and the runtime both read), but those the macro handles itself.
fn table() -> Vec<&'static str> {
    rune_ad::all_ops()
        .into_iter()
        .filter(|op| op.differentiable && !NOT_IN_TABLE.iter().any(|(n, _)| *n == op.name))
        .map(|op| op.name)
        .collect()
}

/// Differentiable ops of the runtime that the macro does not take as a table op, and why.
const NOT_IN_TABLE: &[(&str, &str)] = &[(
    "stop_gradient",
    "handled by the macro itself; tested in macro_semantics",
)];

/// Whether the op `name` appears in `body` (as `stringify!` prints it).
fn appears(name: &str, body: &str) -> bool {
    let operator = match name {
        "add" => Some("+"),
        "sub" | "neg" => Some("-"),
        "mul" => Some("*"),
        "div" => Some("/"),
        _ => None,
    };
    if let Some(op) = operator {
        return body.contains(op);
    }
    let bytes = body.as_bytes();
    body.match_indices(name).any(|(at, _)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = &body[at + name.len()..];
        let starts = !matches!(before, Some(b) if b.is_ascii_alphanumeric() || b == b'_');
        starts && (after.starts_with('(') || after.starts_with("::<"))
    })
}

#[test]
fn every_op_of_the_table_is_exercised() {
    for (test, ops, body) in ENTRIES {
        for op in *ops {
            assert!(
                appears(op, body),
                "entry `{test}` names `{op}` but its body does not use it: {body}"
            );
        }
    }
    let covered: Vec<&str> = ENTRIES
        .iter()
        .flat_map(|(_, ops, _)| ops.iter().copied())
        .collect();
    let table = table();
    let missing: Vec<&&str> = table.iter().filter(|op| !covered.contains(op)).collect();
    assert!(
        missing.is_empty(),
        "ops of the registry without a test through the macro: {missing:?}"
    );
    let unknown: Vec<&&str> = covered.iter().filter(|op| !table.contains(op)).collect();
    assert!(
        unknown.is_empty(),
        "entries name ops outside the registry: {unknown:?}"
    );
}

/// The check used above is not vacuous: a wrong VJP or JVP fails it.
#[test]
fn the_check_catches_wrong_derivatives() {
    let x = vec![make::<f64>(Kind::Normal, &[2, 3], 1)];
    let wrong_vjp = grad_fn(
        |a: &[Tensor<f64>]| a[0].exp(),
        |a: &[Tensor<f64>], t: &[Tensor<f64>]| &t[0] * &a[0].exp(),
        |a: &[Tensor<f64>], g: &Tensor<f64>| vec![g * &a[0].exp() * 1.01],
    );
    let err = check_grad(&wrong_vjp, &x, 1e-5, 1e-5, 1e-5).unwrap_err();
    assert!(matches!(err, GradCheckError::DotProduct { .. }), "{err}");
    let wrong_jvp = grad_fn(
        |a: &[Tensor<f64>]| a[0].exp(),
        |a: &[Tensor<f64>], t: &[Tensor<f64>]| &t[0] * &a[0].exp() * 1.01,
        |a: &[Tensor<f64>], g: &Tensor<f64>| vec![g * &a[0].exp()],
    );
    let err = check_grad(&wrong_jvp, &x, 1e-5, 1e-5, 1e-5).unwrap_err();
    assert!(matches!(err, GradCheckError::Jvp { .. }), "{err}");
}
