//! `fact_ratios [reps]`: the factorization ops at 500 × 500 through rune-ad's `Tensor` API
//! against faer called directly on the same matrix, `f64` and `f32`, as the ratio rune / faer.
//!
//! The two sides of an op alternate call by call (`reps` of each, 15 by default), so that a
//! machine whose speed drifts (a shared one, turbo) slows both alike; each side's time is its
//! minimum, and the median is printed beside it. faer's side is what a user of faer writes for
//! the same result, as in the `factorizations` criterion bench: the high-level solvers on a
//! column-major `Mat`, each result in a `Mat`. Run it pinned to one core:
//! `taskset -c 1 target/release/fact_ratios`.

use std::hint::black_box;
use std::time::Instant;

use faer::linalg::solvers::{DenseSolveCore, Solve};
use faer::{Mat, Side};
use rune_ad::Tensor;
use rune_benches::factor_inputs::{input, random, spd, Scalar};

const N: usize = 500;

/// `(sign, ln |det A|)` from faer's partial-pivot LU, as NumPy's `slogdet`.
fn faer_slogdet<T: Scalar>(a: &Mat<T>) -> (T, T) {
    let lu = a.partial_piv_lu();
    let mut negative = false;
    let mut log = T::zero_impl();
    for &u in lu.U().diagonal().column_vector().iter() {
        negative ^= u < T::zero_impl();
        log += u.abs().ln();
    }
    // The parity of a permutation is that of `n` minus its number of cycles.
    let (fwd, _) = lu.P().arrays();
    let mut seen = vec![false; fwd.len()];
    let mut cycles = 0;
    for i in 0..fwd.len() {
        if !seen[i] {
            cycles += 1;
            let mut j = i;
            while !seen[j] {
                seen[j] = true;
                j = fwd[j];
            }
        }
    }
    negative ^= (fwd.len() - cycles) % 2 == 1;
    let sign = if negative {
        -T::one_impl()
    } else {
        T::one_impl()
    };
    (sign, log)
}

/// The minimum and the median of `reps` calls of each side, alternating.
fn measure<R, F>(
    reps: usize,
    mut rune: impl FnMut() -> R,
    mut faer: impl FnMut() -> F,
) -> [(f64, f64); 2] {
    black_box(rune());
    black_box(faer());
    let (mut r, mut f) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for _ in 0..reps {
        let t = Instant::now();
        black_box(rune());
        r.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        black_box(faer());
        f.push(t.elapsed().as_secs_f64());
    }
    [r, f].map(|mut v| {
        v.sort_by(f64::total_cmp);
        (v[0], v[v.len() / 2])
    })
}

fn row(op: &str, ty: &str, [(rmin, rmed), (fmin, fmed)]: [(f64, f64); 2]) {
    println!(
        "{:18} {ty:4} {:9.3} {:9.3} {:9.3} {:9.3} {:8.2}x {:8.2}x",
        op,
        rmin * 1e3,
        fmin * 1e3,
        rmed * 1e3,
        fmed * 1e3,
        rmin / fmin,
        rmed / fmed
    );
}

fn ops<T: Scalar>(reps: usize) {
    let ty = <T as Scalar>::NAME;
    let a_data = random(N, N, 1);
    let spd_data = spd(&a_data, N);
    let l_data = Tensor::from_vec(spd_data.clone(), &[N, N])
        .cholesky()
        .to_vec();
    let (a, s) = (input::<T>(&a_data, N, N), input::<T>(&spd_data, N, N));
    let (b, l) = (
        input::<T>(&random(N, N, 2), N, N),
        input::<T>(&l_data, N, N),
    );
    let (at, mt) = (&a.tensor, &a.mat);
    let (st, sm) = (&s.tensor, &s.mat);

    let m = measure(reps, || st.cholesky(), || sm.llt(Side::Lower).unwrap());
    row("cholesky", ty, m);
    let m = measure(
        reps,
        || l.tensor.solve_triangular(&b.tensor, true, false),
        || {
            let mut x = b.mat.clone();
            l.mat.solve_lower_triangular_in_place(&mut x);
            x
        },
    );
    row("solve_triangular", ty, m);
    let m = measure(
        reps,
        || l.tensor.cho_solve(&b.tensor),
        || {
            let mut x = b.mat.clone();
            l.mat.solve_lower_triangular_in_place(&mut x);
            l.mat.transpose().solve_upper_triangular_in_place(&mut x);
            x
        },
    );
    row("cho_solve", ty, m);
    let m = measure(
        reps,
        || at.solve(&b.tensor),
        || mt.partial_piv_lu().solve(&b.mat),
    );
    row("solve", ty, m);
    let m = measure(reps, || at.inv(), || mt.partial_piv_lu().inverse());
    row("inv", ty, m);
    let m = measure(reps, || at.det(), || mt.determinant());
    row("det", ty, m);
    let m = measure(reps, || at.slogdet(), || faer_slogdet(mt));
    row("slogdet", ty, m);
    let m = measure(
        reps,
        || at.qr(),
        || {
            let qr = mt.qr();
            (qr.compute_thin_Q(), qr.thin_R().to_owned())
        },
    );
    row("qr", ty, m);
    let m = measure(
        reps,
        || st.eigh(),
        || sm.self_adjoint_eigen(Side::Lower).unwrap(),
    );
    row("eigh", ty, m);
    let m = measure(reps, || at.svd(), || mt.thin_svd().unwrap());
    row("svd", ty, m);
}

fn main() {
    let reps = match std::env::args().nth(1) {
        Some(r) => r.parse().expect("usage: fact_ratios [reps]"),
        None => 15,
    };
    println!(
        "{:18} {:4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "op (ms)", "type", "rune min", "faer min", "rune med", "faer med", "min", "median"
    );
    ops::<f64>(reps);
    ops::<f32>(reps);
}
