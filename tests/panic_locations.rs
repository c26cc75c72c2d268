//! A shape error at run time is reported at the user's expression, whichever generated
//! variant hit it, as in the plain function (one test in this binary: it sets the panic hook).

use std::sync::{Arc, Mutex};

use rune_ad::prelude::*;

const MATMUL_LINE: u32 = line!() + 4;
#[differentiable]
fn f(x: &Tensor<f64>, w: &Tensor<f64>) -> Tensor<f64> {
    let h = x.exp();
    let z = h.matmul(w);
    (z + 1.0).sum()
}

#[test]
fn every_variant_reports_the_users_line() {
    let seen: Arc<Mutex<Vec<(String, u32)>>> = Arc::default();
    let record = Arc::clone(&seen);
    std::panic::set_hook(Box::new(move |info| {
        if let Some(l) = info.location() {
            record.lock().unwrap().push((l.file().to_owned(), l.line()));
        }
    }));
    let x = Tensor::ones(&[2, 3]);
    let w = Tensor::ones(&[2, 3]);
    // The public variants run `f` first under `check-values` (these tests' setting), so the
    // generated passes are also called directly: the reverse pass (`f::fwd`) and forward mode
    // (`f::tangent`).
    let runs: Vec<Box<dyn Fn() + std::panic::RefUnwindSafe>> = vec![
        Box::new(|| drop(f(&x, &w))),
        Box::new(|| drop(f::fwd(&x, &w).0)),
        Box::new(|| drop(f::tangent(&x, &w, &x, &w))),
        Box::new(|| drop(f_grad(&x, &w))),
        Box::new(|| drop(f_value_and_grad(&x, &w))),
        Box::new(|| drop(f_vjp(&x, &w, &Tensor::scalar(1.0)))),
        Box::new(|| drop(f_jvp(&x, &w, &x, &w))),
        Box::new(|| drop(f_pullback(&x, &w).0)),
    ];
    for run in &runs {
        assert!(std::panic::catch_unwind(run).is_err());
    }
    let _ = std::panic::take_hook();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), runs.len());
    for (file, line) in seen.iter() {
        assert!(file.ends_with("panic_locations.rs"), "{file}:{line}");
        assert_eq!(*line, MATMUL_LINE, "{file}:{line}");
    }
}
