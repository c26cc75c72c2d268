//! The factorizations and what is built on them at 500 × 500, through rune-ad's `Tensor` API
//! beside faer called directly on the same matrix, in one run: `cholesky`, `solve_triangular`,
//! `cho_solve`, `solve` (`f64` and `f32`), `inv`, `det`, `slogdet`, `logabsdet`, `sign_det`, `qr`,
//! `qr_q`, `qr_r`, `eigh`, `eigvalsh`, `eigh_vectors`, `svd`, `svdvals`, `svd_u`, `svd_vh` and
//! `lstsq` (`f64`); and some of their rules (`rune` only: each is a factorization plus matrix
//! products). Right-hand sides are `500 × 500` too.
//!
//! Groups are `fact_<op>_<type>` with the functions `rune` and `faer`. faer's side is what a
//! user of faer writes for the same result: the high-level solvers (`llt`, `partial_piv_lu`,
//! `qr`, `self_adjoint_eigen`, `thin_svd`) on a column-major `Mat`, each result in a `Mat`.
//!
//! `cargo bench -p rune-benches --bench factorizations` (add `-- fact_cholesky` for one op); at
//! the end it prints the median of each side and the ratio rune / faer, read from criterion's
//! estimates of the run (`$CARGO_TARGET_DIR/criterion`, else the workspace's `target`).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{BenchmarkGroup, Criterion, SamplingMode};
use faer::linalg::solvers::{DenseSolveCore, Solve, SolveLstsq};
use faer::{Mat, Side};
use rune_ad::__private::rules;
use rune_ad::Tensor;
use rune_benches::factor_inputs::{input, random, spd, Scalar};

const N: usize = 500;

/// The group `fact_<op>_<type>`.
fn group<'a>(
    c: &'a mut Criterion,
    op: &str,
    ty: &str,
) -> BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(format!("fact_{op}_{ty}"));
    g.sampling_mode(SamplingMode::Flat);
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(2));
    g
}

/// `rune` and `faer` of one op.
fn pair<R, F>(
    c: &mut Criterion,
    op: &str,
    ty: &str,
    mut rune: impl FnMut() -> R,
    mut faer: impl FnMut() -> F,
) {
    let mut g = group(c, op, ty);
    g.bench_function("rune", |b| b.iter(|| black_box(rune())));
    g.bench_function("faer", |b| b.iter(|| black_box(faer())));
    g.finish();
}

/// `rune` alone (a rule).
fn alone<R>(c: &mut Criterion, op: &str, ty: &str, mut rune: impl FnMut() -> R) {
    let mut g = group(c, op, ty);
    g.bench_function("rune", |b| b.iter(|| black_box(rune())));
    g.finish();
}

/// The ops run in both element types.
fn common<T: Scalar>(c: &mut Criterion) {
    let ty = <T as Scalar>::NAME;
    let a_data = random(N, N, 1);
    let spd_data = spd(&a_data, N);
    let l_data = Tensor::from_vec(spd_data.clone(), &[N, N])
        .cholesky()
        .to_vec();
    let s = input::<T>(&spd_data, N, N);
    let b = input::<T>(&random(N, N, 2), N, N);
    let a = input::<T>(&a_data, N, N);
    let l = input::<T>(&l_data, N, N);

    pair(
        c,
        "cholesky",
        ty,
        || s.tensor.cholesky(),
        || s.mat.llt(Side::Lower).unwrap(),
    );
    pair(
        c,
        "solve_triangular",
        ty,
        || l.tensor.solve_triangular(&b.tensor, true, false),
        || {
            let mut x = b.mat.clone();
            l.mat.solve_lower_triangular_in_place(&mut x);
            x
        },
    );
    pair(
        c,
        "cho_solve",
        ty,
        || l.tensor.cho_solve(&b.tensor),
        || {
            let mut x = b.mat.clone();
            l.mat.solve_lower_triangular_in_place(&mut x);
            l.mat.transpose().solve_upper_triangular_in_place(&mut x);
            x
        },
    );
    pair(
        c,
        "solve",
        ty,
        || a.tensor.solve(&b.tensor),
        || a.mat.partial_piv_lu().solve(&b.mat),
    );
}

/// `ln |det A|` from faer's partial-pivot LU.
fn faer_logabsdet(a: &Mat<f64>) -> f64 {
    let lu = a.partial_piv_lu();
    lu.U()
        .diagonal()
        .column_vector()
        .iter()
        .map(|u| u.abs().ln())
        .sum()
}

/// The sign of `det A` from faer's partial-pivot LU.
fn faer_sign_det(a: &Mat<f64>) -> f64 {
    let lu = a.partial_piv_lu();
    let negatives = lu
        .U()
        .diagonal()
        .column_vector()
        .iter()
        .filter(|u| **u < 0.0)
        .count();
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
    let swaps = fwd.len() - cycles;
    if (negatives + swaps) % 2 == 1 {
        -1.0
    } else {
        1.0
    }
}

fn f64_only(c: &mut Criterion) {
    let ty = "f64";
    let a_data = random(N, N, 1);
    let s = input::<f64>(&spd(&a_data, N), N, N);
    let b = input::<f64>(&random(N, N, 2), N, N);
    let a = input::<f64>(&a_data, N, N);
    let (at, mt) = (&a.tensor, &a.mat);
    let (st, sm) = (&s.tensor, &s.mat);

    pair(c, "inv", ty, || at.inv(), || mt.partial_piv_lu().inverse());
    pair(c, "det", ty, || at.det(), || mt.determinant());
    pair(
        c,
        "slogdet",
        ty,
        || at.slogdet(),
        || (faer_sign_det(mt), faer_logabsdet(mt)),
    );
    pair(c, "logabsdet", ty, || at.logabsdet(), || faer_logabsdet(mt));
    pair(c, "sign_det", ty, || at.sign_det(), || faer_sign_det(mt));
    let faer_qr = || {
        let qr = mt.qr();
        (qr.compute_thin_Q(), qr.thin_R().to_owned())
    };
    pair(c, "qr", ty, || at.qr(), faer_qr);
    pair(c, "qr_q", ty, || at.qr_q(), || mt.qr().compute_thin_Q());
    pair(c, "qr_r", ty, || at.qr_r(), || mt.qr().thin_R().to_owned());
    pair(
        c,
        "eigh",
        ty,
        || st.eigh(),
        || sm.self_adjoint_eigen(Side::Lower).unwrap(),
    );
    pair(
        c,
        "eigvalsh",
        ty,
        || st.eigvalsh(),
        || sm.self_adjoint_eigenvalues(Side::Lower).unwrap(),
    );
    pair(
        c,
        "eigh_vectors",
        ty,
        || st.eigh_vectors(),
        || sm.self_adjoint_eigen(Side::Lower).unwrap(),
    );
    pair(c, "svd", ty, || at.svd(), || mt.thin_svd().unwrap());
    pair(
        c,
        "svdvals",
        ty,
        || at.svdvals(),
        || mt.singular_values().unwrap(),
    );
    pair(c, "svd_u", ty, || at.svd_u(), || mt.thin_svd().unwrap());
    pair(c, "svd_vh", ty, || at.svd_vh(), || mt.thin_svd().unwrap());
    pair(
        c,
        "lstsq",
        ty,
        || at.lstsq(&b.tensor),
        || mt.qr().solve_lstsq(&b.mat),
    );

    // Rules: a factorization of the input and matrix products.
    let g = &b.tensor;
    let l = st.cholesky();
    let one = Tensor::scalar(1.0);
    alone(c, "rule_cholesky_vjp", ty, || rules::cholesky_vjp(g, &l));
    alone(c, "rule_solve_vjp_lhs", ty, || {
        rules::solve_vjp_lhs(g, at, &at.solve(&b.tensor))
    });
    alone(c, "rule_logabsdet_vjp", ty, || {
        rules::logabsdet_vjp(&one, at)
    });
    alone(c, "rule_det_vjp", ty, || rules::det_vjp(&one, at));
    alone(c, "rule_qr_r_vjp", ty, || rules::qr_r_vjp(g, at));
}

/// The median of `group/who` in criterion's estimates of this run, in seconds.
fn median(root: &Path, group: &str, who: &str) -> Option<f64> {
    let path = root
        .join(group)
        .join(who)
        .join("new")
        .join("estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let rest = &text[text.find("\"median\"")?..];
    let rest = &rest[rest.find("\"point_estimate\":")? + "\"point_estimate\":".len()..];
    let end = rest.find([',', '}'])?;
    rest[..end].trim().parse::<f64>().ok().map(|ns| ns * 1e-9)
}

fn show(s: f64) -> String {
    if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.0} µs", s * 1e6)
    }
}

/// The table of medians and ratios of the groups that ran.
fn report() {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("target")
        });
    let root = target.join("criterion");
    let Ok(dirs) = std::fs::read_dir(&root) else {
        return;
    };
    let mut groups: Vec<String> = dirs
        .filter_map(|d| d.ok()?.file_name().into_string().ok())
        .filter(|g| g.starts_with("fact_"))
        .collect();
    groups.sort();
    println!(
        "\n{:34} {:>10} {:>10} {:>11}",
        "op", "rune", "faer", "rune/faer"
    );
    for g in groups {
        let Some(rune) = median(&root, &g, "rune") else {
            continue;
        };
        match median(&root, &g, "faer") {
            Some(faer) => println!(
                "{g:34} {:>10} {:>10} {:>10.2}×",
                show(rune),
                show(faer),
                rune / faer
            ),
            None => println!("{g:34} {:>10}", show(rune)),
        }
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    common::<f64>(&mut c);
    common::<f32>(&mut c);
    f64_only(&mut c);
    c.final_summary();
    report();
}
