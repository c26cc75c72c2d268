//! Times the stages of W10 (`gp`) one at a time at n = 500: the kernel matrix, its Cholesky
//! factor, `cho_solve`, the log-diagonal, and the rules of the backward pass, each the best of
//! 30 calls. `cargo run --release -p rune-benches --example gp_stages`.

use rune_ad::__private::rules;
use rune_ad::Tensor;
use rune_benches::w10_gp::W10;
use std::time::Instant;

fn t<R>(name: &str, mut f: impl FnMut() -> R) -> R {
    let mut r = f();
    let mut best = f64::MAX;
    for _ in 0..30 {
        let s = Instant::now();
        r = f();
        best = best.min(s.elapsed().as_secs_f64());
    }
    println!("{name:30} {:8.3} ms", best * 1e3);
    r
}

fn main() {
    let w = W10::default();
    let (theta, x, y, eye) = (&w.theta, &w.x, &w.y, &w.eye);
    let k = t("kernel", || {
        let ell2 = (theta.shrink(&[(0, 1)]).squeeze(0) * 2.0).exp();
        let sf2 = theta.shrink(&[(1, 2)]).squeeze(0).exp();
        let sn2 = theta.shrink(&[(2, 3)]).squeeze(0).exp();
        let d = x.expand_dims(1) - x.expand_dims(0);
        sf2 * (d.square() * -0.5 / ell2).exp() + sn2 * eye
    });
    let l = t("cholesky", || k.cholesky());
    let yc = y.expand_dims(1);
    let alpha = t("cho_solve", || l.cho_solve(&yc));
    t("diag ln sum", || l.diagonal().ln().sum());
    let ga = &yc * 0.5;
    let gl1 = t("cho_solve_vjp_lhs", || {
        rules::cho_solve_vjp_lhs(&ga, &l, &alpha)
    });
    let gd = t("diag ln vjp", || Tensor::ones(&[500]) / l.diagonal());
    let gl2 = t("diagonal_vjp", || rules::diagonal_vjp(&gd, l.shape()));
    let gl = t("add", || &gl1 + &gl2);
    let gk = t("cholesky_vjp", || rules::cholesky_vjp(&gl, &l));
    let s = gk.sum();
    println!("{}", s.item());
}
