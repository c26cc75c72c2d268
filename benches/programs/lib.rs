//! The programs W5–W12 of docs/PROGRAMS.md (a transformer, a CNN, an LSTM, an RK4-integrated ODE, an
//! N-body potential, a Gaussian-process likelihood, a Bayesian logistic regression, a Gaussian
//! mixture), each written as a user writes it with rune-ad, and for W8, W9, W11 and W12 a
//! hand-written Rust baseline (plain loops, gradients derived by hand).
//!
//! The `programs` binary times them as `bench_jax.py` and `bench_torch.py` time JAX and PyTorch;
//! `tests/programs.rs` checks them against the check values of docs/PROGRAMS.md §5.

pub mod factor_inputs;
pub mod harness;
pub mod w10_gp;
pub mod w11_logreg;
pub mod w12_mixture;
pub mod w5_transformer;
pub mod w6_cnn;
pub mod w7_lstm;
pub mod w8_rk4;
pub mod w9_nbody;
