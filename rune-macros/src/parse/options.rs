//! The options of `#[differentiable(..)]`.

use proc_macro2::TokenStream;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Meta, Token};

use crate::diag::Errors;

/// Options of `#[differentiable(..)]`.
#[derive(Default)]
pub struct Options {
    /// `has_aux`: the function returns `(value, aux)` and only `value` is differentiated.
    pub has_aux: bool,
    /// `checkpoint`: callers recompute this function's forward pass in their backward pass
    /// instead of keeping its intermediates.
    pub checkpoint: bool,
    /// `custom_vjp = rule`: `rule(params.., cotangent) -> grads` replaces the derived VJP.
    pub custom_vjp: Option<syn::Path>,
    /// `custom_jvp = rule`: `rule(params.., tangents..) -> tangent` replaces the derived JVP.
    pub custom_jvp: Option<syn::Path>,
    /// `hvp`: also generate `f_hvp` for a function on a concrete element type (generic
    /// functions always get it).
    pub hvp: bool,
    /// `vmap`: also generate the batched entry points (`f_vmap`, `f_grad_vmap`, ..).
    pub vmap: bool,
    /// `fuse = false`: every op runs as its own runtime call (for debugging and A/B
    /// comparisons); the `no-fusion` feature sets it for every function.
    pub unfused: bool,
}

impl Options {
    /// Whether elementwise regions are fused.
    pub fn fuses(&self) -> bool {
        !self.unfused && !cfg!(feature = "no-fusion")
    }
}

/// Parses the attribute's arguments, recording unknown ones.
pub fn options(args: TokenStream, errors: &mut Errors) -> Options {
    let mut options = Options::default();
    // `dyn` is a keyword, which `Meta` does not parse; it belongs on a trait.
    let (found, args) = take_dyn(args);
    if let Some(token) = found {
        errors.at(
            token,
            "`dyn` goes on a trait, whose every impl it then boxes: \
             `#[differentiable(dyn)] trait Layer { .. }`",
        );
    }
    let metas = match Punctuated::<Meta, Token![,]>::parse_terminated.parse2(args) {
        Ok(m) => m,
        Err(e) => {
            errors.push(e);
            return options;
        }
    };
    for meta in metas {
        match &meta {
            Meta::Path(p) if p.is_ident("has_aux") => options.has_aux = true,
            Meta::Path(p) if p.is_ident("checkpoint") => options.checkpoint = true,
            Meta::Path(p) if p.is_ident("hvp") => options.hvp = true,
            Meta::Path(p) if p.is_ident("vmap") => options.vmap = true,
            Meta::NameValue(nv) if nv.path.is_ident("fuse") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Bool(b),
                    ..
                }) => options.unfused = !b.value,
                other => errors.at(other, "write `fuse = false` or `fuse = true`"),
            },
            Meta::NameValue(nv)
                if nv.path.is_ident("custom_vjp") || nv.path.is_ident("custom_jvp") =>
            {
                let rule = match &nv.value {
                    syn::Expr::Path(p) if p.qself.is_none() => Some(p.path.clone()),
                    other => {
                        errors.at(other, "name the rule function: `custom_vjp = my_rule`");
                        None
                    }
                };
                if nv.path.is_ident("custom_vjp") {
                    options.custom_vjp = rule;
                } else {
                    options.custom_jvp = rule;
                }
            }
            _ => errors.at(
                &meta,
                "unknown argument of #[differentiable]; supported: `has_aux`, `checkpoint`, `hvp`, \
                 `vmap`, `custom_vjp = rule`, `custom_jvp = rule`, `fuse = false`, and `dyn` on a trait",
            ),
        }
    }
    if let (Some(vjp), None) = (&options.custom_vjp, &options.custom_jvp) {
        // A custom VJP says the body's derivative is not the one wanted; forward mode derived
        // from the body would then disagree with reverse mode without a word.
        errors.at(
            vjp,
            "`custom_vjp` needs a forward-mode rule beside it: add `custom_jvp = rule`, \
             `rule(params.., tangents..) -> tangent`, so that `f_jvp` and the forward mode of \
             callers agree with the custom reverse mode",
        );
    }
    options
}

/// The `dyn` among `args`, if there is one, and the other arguments.
pub fn take_dyn(args: TokenStream) -> (Option<proc_macro2::Ident>, TokenStream) {
    let mut found = None;
    let mut rest = Vec::new();
    let mut after_dyn = false;
    for tt in args {
        match &tt {
            proc_macro2::TokenTree::Ident(i) if i == "dyn" => {
                found = Some(i.clone());
                after_dyn = true;
                continue;
            }
            proc_macro2::TokenTree::Punct(p) if p.as_char() == ',' && after_dyn => {
                after_dyn = false;
                continue;
            }
            _ => after_dyn = false,
        }
        rest.push(tt);
    }
    (found, rest.into_iter().collect())
}
