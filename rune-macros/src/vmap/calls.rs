//! A call of a batched function inside a `#[differentiable]` body (`g_vmap(Batch(&xs), &w)`):
//! rewritten into a call of its twin, `__vmap_g(&xs, &w, true, false, n)`, which the body then
//! differentiates as any call: the gradient of a function of a batch (`jax.grad` of a function
//! using `jax.vmap`).

use quote::{format_ident, quote};
use syn::visit_mut::VisitMut;
use syn::{Block, Expr};

/// `block` with each call of a generated `g_vmap` that has a `Batch(..)` argument rewritten.
pub fn batched_calls(block: &Block) -> Block {
    let mut block = block.clone();
    Rewriter.visit_block_mut(&mut block);
    block
}

/// The other batched entry points, which are not differentiated inside a function (yet).
const DERIVATIVES: &[&str] = &["_grad", "_value_and_grad", "_vjp", "_jvp"];

struct Rewriter;

impl VisitMut for Rewriter {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, e);
        let Expr::Call(call) = e else { return };
        let Expr::Path(func) = &*call.func else {
            return;
        };
        let Some(last) = func.path.segments.last() else {
            return;
        };
        let name = last.ident.to_string();
        let Some(base) = name.strip_suffix("_vmap") else {
            return;
        };
        if base.is_empty() || DERIVATIVES.iter().any(|d| base.ends_with(d)) {
            return;
        }
        let batched: Vec<Option<&Expr>> = call.args.iter().map(batch_inner).collect();
        if batched.iter().all(Option::is_none) {
            return;
        }
        let mut twin = func.clone();
        let last = twin.path.segments.last_mut().expect("a path has a segment");
        last.ident = format_ident!("__vmap_{}", base, span = last.ident.span());
        let values = call
            .args
            .iter()
            .zip(&batched)
            .map(|(arg, inner)| inner.unwrap_or(arg));
        let flags = batched.iter().map(Option::is_some);
        let lens = batched
            .iter()
            .flatten()
            // A method call, whose auto-deref reaches the tensor or structure through references.
            .map(|inner| {
                quote!({
                    use ::rune_ad::__private::VmapLen as _;
                    (#inner).vmap_len()
                })
            });
        *e = syn::parse_quote!(#twin(#(#values,)* #(#flags,)*
            ::rune_ad::__private::vmap_call_size(#name, &[#(#lens),*])));
    }
}

/// `x` of an argument written `Batch(x)`.
fn batch_inner(arg: &Expr) -> Option<&Expr> {
    let Expr::Call(call) = arg else { return None };
    let Expr::Path(func) = &*call.func else {
        return None;
    };
    let is_batch = func
        .path
        .segments
        .last()
        .is_some_and(|s| s.ident == "Batch");
    (is_batch && call.args.len() == 1).then(|| &call.args[0])
}
