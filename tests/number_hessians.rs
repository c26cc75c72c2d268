//! `f_hvp` and the Hessian of functions of numbers, the way a scientist writes them: numbers and
//! arrays as parameters, helpers returning numbers, tuples and arrays, local arrays written by
//! index, loops and branches. `#[differentiable(hvp)]` makes each function's dual-number twin
//! (forward over reverse). Every Hessian-vector product is checked against central differences
//! of the function's own gradient, its symmetry (⟨u, H v⟩ = ⟨v, H u⟩), and where it is short,
//! against the Hessian derived by hand.

use rune_ad::prelude::*;

/// Rosenbrock's function of two numbers.
#[differentiable(hvp)]
fn rosenbrock(a: f64, b: f64) -> f64 {
    (1.0 - a) * (1.0 - a) + (b - a * a) * (b - a * a) * 100.0
}

/// A pair interaction, called by [`chain_energy`].
#[differentiable(hvp)]
fn pair(a: f64, b: f64) -> f64 {
    let d = a - b;
    d * d * d.cos() + a.ln_1p().exp_m1()
}

/// The energy of a ring of three coordinates: springs plus pair terms, through a helper.
#[differentiable(hvp)]
fn chain_energy(x: &[f64; 3], #[nodiff] k: f64) -> f64 {
    let mut e = 0.0;
    for i in 0..3 {
        e += k * x[i].powi(2) + pair(x[i], x[(i + 1) % 3]);
    }
    e
}

/// The pendulum's right-hand side: a helper returning a tuple.
#[differentiable(hvp)]
fn pendulum(x: f64, v: f64, #[nodiff] w: f64) -> (f64, f64) {
    (v, -w * w * x.sin())
}

/// One midpoint step: a helper taking and returning an array.
#[differentiable(hvp)]
fn midpoint(s: [f64; 2], #[nodiff] h: f64) -> [f64; 2] {
    let (k1x, k1v) = pendulum(s[0], s[1], 2.0);
    let (k2x, k2v) = pendulum(s[0] + 0.5 * h * k1x, s[1] + 0.5 * h * k1v, 2.0);
    [s[0] + h * k2x, s[1] + h * k2v]
}

/// A shooting objective: integrate ten steps from `(x0, v0)`, then score the end state.
#[differentiable(hvp)]
fn shoot(x0: f64, v0: f64, #[nodiff] h: f64) -> f64 {
    let (mut x, mut v) = (x0, v0);
    for _ in 0..10 {
        let [nx, nv] = midpoint([x, v], h);
        x = nx;
        v = nv;
    }
    x * x + v
}

/// Explicit Euler on a local array written by index, from a slice.
#[differentiable(hvp)]
fn euler(x: &[f64], #[nodiff] h: f64) -> f64 {
    let mut s = [0.0; 2];
    s[0] = x[0];
    s[1] = x[1];
    for _ in 0..3 {
        let d = [s[1], -s[0].sin()];
        s[0] += h * d[0];
        s[1] += h * d[1];
    }
    s[0] * s[0] + s[1].exp()
}

/// A branch on a value and a name bound in each arm (deferred initialisation, as written).
#[allow(clippy::needless_late_init)]
#[differentiable(hvp)]
fn branchy(a: f64, b: f64) -> f64 {
    let (u, v) = (a * b, a - b);
    let r;
    if u > 0.0 {
        r = u * v;
    } else {
        r = v;
    }
    r.ln_1p() + a.hypot(b) + a.atan2(b)
}

/// In `f32`: `a³ b + sin(b)`.
#[differentiable(hvp)]
fn cubic32(a: f32, b: f32) -> f32 {
    a * a * a * b + b.sin()
}

const EPS: f64 = 1e-5;

fn assert_close(got: f64, want: f64, tol: f64, what: &str) {
    assert!(
        (got - want).abs() <= tol * want.abs().max(1.0),
        "{what}: {got} against {want}"
    );
}

/// `(grad(x + ε v) - grad(x - ε v)) / 2ε`, a central difference of the gradient along `v`.
fn gradient_difference<const N: usize>(
    grad: impl Fn([f64; N]) -> [f64; N],
    x: [f64; N],
    v: [f64; N],
) -> [f64; N] {
    let plus = grad(std::array::from_fn(|i| x[i] + EPS * v[i]));
    let minus = grad(std::array::from_fn(|i| x[i] - EPS * v[i]));
    std::array::from_fn(|i| (plus[i] - minus[i]) / (2.0 * EPS))
}

fn dot<const N: usize>(a: [f64; N], b: [f64; N]) -> f64 {
    a.iter().zip(&b).map(|(x, y)| x * y).sum()
}

/// Checks `hvp` (gradient and H v from one call) against the gradient's central differences
/// and the symmetry of the Hessian.
fn check_hvp<const N: usize>(
    name: &str,
    hvp: impl Fn([f64; N], [f64; N]) -> ([f64; N], [f64; N]),
    grad: impl Fn([f64; N]) -> [f64; N],
    x: [f64; N],
) {
    let u: [f64; N] = std::array::from_fn(|i| 0.7 - 0.45 * i as f64);
    let v: [f64; N] = std::array::from_fn(|i| -0.3 + 0.8 * (i % 2) as f64);
    let (g, hv) = hvp(x, v);
    let (_, hu) = hvp(x, u);
    let want_g = grad(x);
    let fd = gradient_difference(&grad, x, v);
    for i in 0..N {
        assert_eq!(
            g[i], want_g[i],
            "{name}: the gradient of f_hvp, element {i}"
        );
        assert_close(hv[i], fd[i], 1e-6, &format!("{name}: H v, element {i}"));
    }
    assert_close(dot(u, hv), dot(v, hu), 1e-12, &format!("{name}: symmetry"));
}

#[test]
fn rosenbrocks_hessian_is_the_one_by_hand() {
    let (a, b) = (1.5, 0.5);
    // H = [[2 - 400 (b - 3a²), -400 a], [-400 a, 200]].
    let h = [
        [2.0 - 400.0 * (b - 3.0 * a * a), -400.0 * a],
        [-400.0 * a, 200.0],
    ];
    let (g, (h0, h1)) = rosenbrock_hvp(a, b, &1.0, &0.0);
    assert_eq!((h0, h1), (h[0][0], h[1][0]));
    let (_, (h0, h1)) = rosenbrock_hvp(a, b, &0.0, &1.0);
    assert_eq!((h0, h1), (h[0][1], h[1][1]));
    assert_eq!(g, rosenbrock_grad(a, b));
    check_hvp(
        "rosenbrock",
        |x, v| {
            let (g, hv) = rosenbrock_hvp(x[0], x[1], &v[0], &v[1]);
            ([g.0, g.1], [hv.0, hv.1])
        },
        |x| {
            let g = rosenbrock_grad(x[0], x[1]);
            [g.0, g.1]
        },
        [a, b],
    );
}

#[test]
fn an_array_through_a_helper() {
    let x = [0.3, -0.7, 1.1];
    check_hvp(
        "chain_energy",
        |x, v| chain_energy_hvp(&x, 0.4, &v),
        |x| chain_energy_grad(&x, 0.4),
        x,
    );
    // The Hessian from unit directions is symmetric, and its diagonal holds the springs' 2k.
    let h = hessian_of_numbers(|x, v| chain_energy_hvp(x, 0.4, v).1, &x);
    assert_eq!(h.shape(), &[3, 3]);
    let h = h.to_vec();
    for i in 0..3 {
        for j in 0..3 {
            assert_close(h[i * 3 + j], h[j * 3 + i], 1e-12, "symmetry");
        }
    }
    let without_springs = hessian_of_numbers(|x, v| chain_energy_hvp(x, 0.0, v).1, &x).to_vec();
    for i in 0..3 {
        assert_close(
            h[i * 4] - without_springs[i * 4],
            0.8,
            1e-12,
            "2k on the diagonal",
        );
    }
}

#[test]
fn an_integrator_through_tuple_and_array_helpers() {
    check_hvp(
        "shoot",
        |x, v| {
            let (g, hv) = shoot_hvp(x[0], x[1], 0.05, &v[0], &v[1]);
            ([g.0, g.1], [hv.0, hv.1])
        },
        |x| {
            let g = shoot_grad(x[0], x[1], 0.05);
            [g.0, g.1]
        },
        [0.3, 0.2],
    );
}

#[test]
fn a_local_array_written_by_index_from_a_slice() {
    check_hvp(
        "euler",
        |x, v| {
            let (g, hv) = euler_hvp(&x, 0.1, &v.to_vec());
            (g.try_into().unwrap(), hv.try_into().unwrap())
        },
        |x| euler_grad(&x, 0.1).try_into().unwrap(),
        [0.4, 0.9],
    );
}

#[test]
fn branches_on_values_take_the_branch_of_the_primal() {
    for point in [[0.5, 0.8], [-0.5, 0.8]] {
        check_hvp(
            "branchy",
            |x, v| {
                let (g, hv) = branchy_hvp(x[0], x[1], &v[0], &v[1]);
                ([g.0, g.1], [hv.0, hv.1])
            },
            |x| {
                let g = branchy_grad(x[0], x[1]);
                [g.0, g.1]
            },
            point,
        );
    }
}

#[test]
fn in_f32_the_hessian_is_the_one_by_hand() {
    let (a, b) = (1.5f32, 0.5f32);
    // H = [[6ab, 3a²], [3a², -sin b]].
    let (_, (h00, h10)) = cubic32_hvp(a, b, &1.0, &0.0);
    let (_, (h01, h11)) = cubic32_hvp(a, b, &0.0, &1.0);
    assert!((h00 - 6.0 * a * b).abs() < 1e-5);
    assert!((h10 - 3.0 * a * a).abs() < 1e-5 && (h01 - 3.0 * a * a).abs() < 1e-5);
    assert!((h11 + b.sin()).abs() < 1e-5);
}
