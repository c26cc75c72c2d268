//! `cast` between f32, f64 and dual numbers, and `stop_gradient`.

use rune_runtime::__private::rules::*;
use rune_runtime::{all_ops, check_grad, grad_fn, stop_gradient, Dual, Element, Tensor};

use crate::common::{tensor, uniform, Case};

pub fn cases<T: Element>() -> Vec<Case<T>> {
    let x = vec![uniform::<T>(&[2, 3], -2.0, 2.0, 400)];
    let mut cases = Vec::new();
    // For T = f32 this runs f32 -> f64 (the square in f64) -> f32: both directions' rules.
    cases.push(Case::new(
        "cast",
        "T -> f64, squared, -> T",
        x.clone(),
        |x| {
            let z = x[0].cast::<f64>();
            (&z * &z).cast::<T>()
        },
        |x, t| {
            let z = x[0].cast::<f64>();
            let dz = cast_jvp::<T, f64>(&t[0]);
            let dy = mul_jvp(&z, &z, &(&z * &z), Some(&dz), Some(&dz));
            cast_jvp::<f64, T>(&dy)
        },
        |x, g| {
            let z = x[0].cast::<f64>();
            let gz = cast_vjp::<f64, T>(g);
            let gx = mul_vjp_lhs(&gz, z.shape(), &z) + mul_vjp_rhs(&gz, &z, z.shape());
            vec![cast_vjp::<T, f64>(&gx)]
        },
    ));
    cases.push(Case::new(
        "cast",
        "T -> Dual<T>, scaled, -> T",
        x.clone(),
        |x| (x[0].cast::<Dual<T>>() * Dual::from_f64(1.5)).cast::<T>(),
        |x, t| {
            let s = Dual::<T>::from_f64(1.5);
            let z = x[0].cast::<Dual<T>>();
            let dz = cast_jvp::<T, Dual<T>>(&t[0]);
            cast_jvp::<Dual<T>, T>(&mul_jvp(&z, &s, &(&z * s), Some(&dz), None))
        },
        |_, g| {
            let s = Dual::<T>::from_f64(1.5);
            let gz = cast_vjp::<Dual<T>, T>(g);
            vec![cast_vjp::<T, Dual<T>>(&mul_vjp_lhs(&gz, gz.shape(), &s))]
        },
    ));
    cases.push(Case::new(
        "cast",
        "T -> T",
        x,
        |x| x[0].cast::<T>(),
        |_, t| cast_jvp::<T, T>(&t[0]),
        |_, g| vec![cast_vjp::<T, T>(g)],
    ));
    cases
}

fn bits(t: &Tensor<f64>) -> Vec<u64> {
    t.to_vec().into_iter().map(f64::to_bits).collect()
}

const F64_VALUES: [f64; 9] = [
    0.1,
    1.0 / 3.0,
    std::f64::consts::PI,
    1e300,
    5e-324,
    -0.0,
    1.0 + f64::EPSILON,
    f64::INFINITY,
    -123_456_789.123_456_79,
];

#[test]
fn f64_values_survive_f64_casts_exactly() {
    let x = Tensor::from_vec(F64_VALUES.to_vec(), &[3, 3]);
    assert_eq!(bits(&x.cast::<f64>()), bits(&x));
    assert_eq!(bits(&x.cast::<Dual<f64>>().cast::<f64>()), bits(&x));
    let d = x.cast::<Dual<f64>>().cast::<Dual<Dual<f64>>>();
    let back: Vec<u64> = d.to_vec().iter().map(|v| v.re.re.to_bits()).collect();
    assert_eq!(back, bits(&x));
    // The cotangent of an f64 -> Dual<f64> cast comes back in f64, bit for bit.
    let g = cast_vjp::<f64, Dual<f64>>(&x.map(|&v| Dual::new(v, 1.0)));
    assert_eq!(bits(&g), bits(&x));
    // A same-type cast shares storage (of a tensor too large to be held inline, whose clones
    // are copies).
    let big = Tensor::<f64>::zeros(&[64]);
    assert_eq!(big.cast::<f64>().view().as_ptr(), big.view().as_ptr());
    // f32 -> f64 -> f32 is the identity.
    let y = Tensor::from_vec(vec![0.1_f32, f32::MAX, 1e-45, -7.25], &[4]);
    assert_eq!(y.cast::<f64>().cast::<f32>().to_vec(), y.to_vec());
}

#[test]
fn f32_and_f64_convert_like_as() {
    let wide = [0.1, 1e40, -1e40, 1e-50, 16_777_217.0, 0.1 + 1e-17];
    let x = Tensor::from_vec(wide.to_vec(), &[6]);
    let narrow: Vec<f32> = wide.iter().map(|&v| v as f32).collect();
    assert_eq!(x.cast::<f32>().to_vec(), narrow);
    assert_eq!(narrow[1], f32::INFINITY);
    assert_eq!(narrow[4], 16_777_216.0);
    assert!(Tensor::scalar(f64::NAN).cast::<f32>().item().is_nan());
    let y = Tensor::from_vec(vec![0.1_f32, 3.3], &[2]);
    assert_eq!(
        y.cast::<f64>().to_vec(),
        vec![0.1_f32 as f64, 3.3_f32 as f64]
    );
    assert_ne!(y.cast::<f64>().to_vec()[0], 0.1_f64);
}

#[test]
fn cast_rules_return_the_right_element_type() {
    let g32 = Tensor::from_vec(vec![0.1_f32, -2.5], &[2]);
    // x: f64 cast to f32; the gradient is an f64 tensor holding the f32 values exactly.
    let gx: Tensor<f64> = cast_vjp::<f64, f32>(&g32);
    assert_eq!(gx.to_vec(), vec![0.1_f32 as f64, -2.5]);
    let g64 = Tensor::from_vec(vec![0.1_f64, -2.5], &[2]);
    let gx: Tensor<f32> = cast_vjp::<f32, f64>(&g64);
    assert_eq!(gx.to_vec(), vec![0.1_f32, -2.5]);
    let dy: Tensor<f32> = cast_jvp::<f64, f32>(&g64);
    assert_eq!(dy.to_vec(), vec![0.1_f32, -2.5]);
    let dy: Tensor<f64> = cast_jvp::<f32, f64>(&g32);
    assert_eq!(dy.to_vec(), vec![0.1_f32 as f64, -2.5]);
    assert_eq!(
        std::any::type_name_of_val(&dy),
        std::any::type_name::<Tensor<f64>>()
    );
}

/// f64 -> f32 -> f64 loses f64 precision on purpose, so it is checked at f32's tolerances.
#[test]
fn f64_through_f32_matches_finite_differences_at_f32_precision() {
    let f = grad_fn(
        |x: &[Tensor<f64>]| {
            let z = x[0].cast::<f32>();
            (&z * &z).cast::<f64>()
        },
        |x: &[Tensor<f64>], t: &[Tensor<f64>]| {
            let z = x[0].cast::<f32>();
            let dz = cast_jvp::<f64, f32>(&t[0]);
            cast_jvp::<f32, f64>(&mul_jvp(&z, &z, &(&z * &z), Some(&dz), Some(&dz)))
        },
        |x: &[Tensor<f64>], g: &Tensor<f64>| {
            let z = x[0].cast::<f32>();
            let gz = cast_vjp::<f32, f64>(g);
            let gx = mul_vjp_lhs(&gz, z.shape(), &z) + mul_vjp_rhs(&gz, &z, z.shape());
            vec![cast_vjp::<f64, f32>(&gx)]
        },
    );
    let x = uniform::<f64>(&[3, 2], -2.0, 2.0, 401);
    check_grad(&f, &[x], f32::FD_EPS, f32::GRAD_TOL, f32::GRAD_TOL).unwrap();
}

#[test]
fn dual_casts_keep_both_parts_between_duals_and_the_primal_otherwise() {
    let x = Tensor::from_vec(vec![Dual::new(1.5_f32, 0.1), Dual::new(-2.0, 3.0)], &[2]);
    let wide = x.cast::<Dual<f64>>();
    let parts: Vec<(f64, f64)> = wide.to_vec().iter().map(|d| (d.re, d.du)).collect();
    assert_eq!(parts, vec![(1.5, 0.1_f32 as f64), (-2.0, 3.0)]);
    let back = wide.cast::<Dual<f32>>();
    let parts: Vec<(f32, f32)> = back.to_vec().iter().map(|d| (d.re, d.du)).collect();
    assert_eq!(parts, vec![(1.5, 0.1), (-2.0, 3.0)]);
    // Dual -> real takes the primal; real -> dual is a constant.
    assert_eq!(wide.cast::<f32>().to_vec(), vec![1.5, -2.0]);
    let c = tensor::<f64>(&[0.1], &[1]).cast::<Dual<f32>>().item();
    assert_eq!((c.re, c.du), (0.1_f32, 0.0));
    // Nested: parts map from the outside in.
    let n = Tensor::scalar(Dual::new(Dual::new(1.0_f64, 2.0), Dual::new(3.0, 4.0)));
    let outer = n.cast::<Dual<f32>>().item();
    assert_eq!((outer.re, outer.du), (1.0, 3.0));
    let up = wide.cast::<Dual<Dual<f64>>>().to_vec()[1];
    assert_eq!(
        (up.re.re, up.re.du, up.du.re, up.du.du),
        (-2.0, 0.0, 3.0, 0.0)
    );
}

/// Forward mode through a cast: the derivative of `(x as f64)²` seeded in f32 duals.
#[test]
fn a_dual_tangent_flows_through_a_cast() {
    let x = Tensor::scalar(Dual::variable(1.5_f32));
    let z = x.cast::<Dual<f64>>();
    let y = (&z * &z).item();
    assert_eq!((y.re, y.du), (2.25, 3.0));
}

#[test]
fn stop_gradient_passes_the_value_and_is_a_constant_to_ad() {
    let x = tensor::<f64>(&[1.0, -2.0, 3.5], &[3]);
    let y = stop_gradient(&x);
    assert_eq!(y.shape(), x.shape());
    assert_eq!(y.to_vec(), x.to_vec());
    let ops = all_ops();
    let find = |name: &str| ops.iter().find(|op| op.name == name).copied();
    assert!(!find("stop_gradient").unwrap().differentiable);
    assert!(find("cast").unwrap().differentiable);
    assert_eq!(find("cast").unwrap().reference, "cast");
    for (name, reference) in [
        ("clone", "contiguous, copy"),
        ("scalar", "const_scalar"),
        ("from_vec", "const_array"),
        ("rand_uniform", "threefry"),
        ("rand_normal", "threefry"),
        ("add_assign", "assign"),
        ("div_assign", "assign"),
    ] {
        let op = find(name).unwrap_or_else(|| panic!("{name} is not in the op table"));
        assert!(!op.differentiable, "{name}");
        assert_eq!(op.reference, reference, "{name}");
    }
}
