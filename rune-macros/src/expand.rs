//! The entry point: runs the stages and, on errors, emits them with fallback items.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::visit_mut::VisitMut;
use syn::ItemFn;

use crate::diag::Errors;
use crate::emit::Emitter;
use crate::parse::{Options, Signature};
use crate::{analyse, lower, parse};

/// Expands `#[differentiable(args)] item`.
pub fn differentiable(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
    let mut func: ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            errors.at(
                &item,
                "#[differentiable] applies to a function (`fn f(x: &Tensor<T>, ..) -> Tensor<T>`)",
            );
            let errs = errors.to_compile_errors();
            return quote!(#errs #item);
        }
    };
    let original = func.clone();
    let options = parse::options(args, &mut errors);
    let sig = parse::signature(&mut func, &options, &mut errors);
    let Some(sig) = sig else {
        let errs = errors.to_compile_errors();
        return quote!(#errs #func);
    };
    let body = lower::lower(&sig, &func.block, &mut errors);
    let analysis = analyse::analyse(&body, &mut errors);
    let concrete = concrete_element(&func, &sig);
    if options.hvp {
        check_hvp_option(&func, &sig, &options, concrete.is_some(), &mut errors);
    }
    if !errors.is_empty() {
        let errs = errors.to_compile_errors();
        let stubs = Emitter::stubs(&func, &sig);
        return quote!(#errs #func #stubs);
    }
    let generated = Emitter {
        func: &func,
        sig: &sig,
        body: &body,
        analysis: &analysis,
        options: &options,
        dual_twin: concrete.as_ref().filter(|_| options.hvp).map(|_| ()),
        is_twin: false,
    }
    .emit();
    let twin = match (&concrete, options.hvp) {
        (Some(elem), true) => dual_twin(&original, elem),
        _ => quote!(),
    };
    quote!(#func #generated #twin)
}

/// The element type of a function written for a concrete one (`f32`, `f64`), if it is.
fn concrete_element(func: &ItemFn, sig: &Signature) -> Option<syn::Type> {
    let (_, first) = sig.active().find(|(_, a)| !a.structure)?;
    let elem = &first.elem;
    let elem_text = quote!(#elem).to_string();
    let generic = func
        .sig
        .generics
        .type_params()
        .any(|t| t.ident == elem_text);
    (!generic).then(|| elem.clone())
}

/// `hvp` applies to functions on a concrete element type of tensor parameters only.
fn check_hvp_option(
    func: &ItemFn,
    sig: &Signature,
    options: &Options,
    concrete: bool,
    errors: &mut Errors,
) {
    if !concrete {
        errors.at(
            &func.sig.ident,
            "`hvp` is for functions on a concrete element type; a function generic over its \
             element type (`<T: Element>`) gets `f_hvp` without it",
        );
    }
    if sig.active().any(|(_, a)| a.structure) {
        errors.at(
            &func.sig.ident,
            "`f_hvp` takes tensor parameters; pass a structure's tensors separately",
        );
    }
    if options.custom_vjp.is_some() || options.custom_jvp.is_some() || options.has_aux {
        errors.at(
            &func.sig.ident,
            "`hvp` cannot be combined with `custom_vjp`, `custom_jvp` or `has_aux`",
        );
    }
    if !matches!(sig.returns, parse::Returns::Single(_)) {
        errors.at(
            &func.sig.ident,
            "`f_hvp` needs a function returning one tensor",
        );
    }
}

/// The function again on dual numbers (`Tensor<f64>` → `Tensor<Dual<f64>>`), hidden, whose
/// generated gradient `f_dual_grad` is what `f_hvp` runs: forward over reverse.
fn dual_twin(original: &ItemFn, elem: &syn::Type) -> TokenStream {
    let mut twin = original.clone();
    twin.sig.ident = format_ident!("{}_dual", original.sig.ident);
    twin.attrs.retain(|a| !a.path().is_ident("doc"));
    let mut rewrite = ToDual {
        elem: quote!(#elem).to_string(),
        dual: syn::parse_quote!(::rune_ad::__private::Dual<#elem>),
    };
    rewrite.visit_item_fn_mut(&mut twin);
    let mut errors = Errors::default();
    let options = Options::default();
    let mut func = twin;
    let Some(sig) = parse::signature(&mut func, &options, &mut errors) else {
        return quote!();
    };
    let body = lower::lower(&sig, &func.block, &mut errors);
    let analysis = analyse::analyse(&body, &mut errors);
    if !errors.is_empty() {
        return quote!();
    }
    let generated = Emitter {
        func: &func,
        sig: &sig,
        body: &body,
        analysis: &analysis,
        options: &options,
        dual_twin: None,
        is_twin: true,
    }
    .emit();
    // The twin's own plain function is not needed (its body would call the plain callees).
    generated
}

/// Rewrites the element type `E` to `Dual<E>` where a body names it as a tensor's element:
/// `Tensor<E>` in types and paths (`let y: Tensor<E>`, `Tensor::<E>::zeros`) and the target of
/// `cast` (`mask.cast::<E>()`, `Tensor::<bool>::cast::<E>(&mask)`), so that a mask cast to
/// numbers meets the twin's dual tensors as dual numbers. A tensor built from values of `E`
/// (`Tensor::<E>::from_vec(vec![..], ..)`, `full`, `scalar`, ...) is built as written and cast
/// to a constant of `Dual<E>`. Scalars of type `E` stay: tensors of `Dual<E>` take them as
/// constants.
struct ToDual {
    elem: String,
    dual: syn::Type,
}

/// The constructors of `Tensor<E>` that take values of `E`.
const FROM_VALUES: &[&str] = &[
    "from_vec",
    "scalar",
    "full",
    "arange_step",
    "rand_uniform",
    "rand_normal",
];

impl ToDual {
    /// True when the first generic argument is the element type.
    fn names_elem(&self, args: &syn::AngleBracketedGenericArguments) -> bool {
        matches!(args.args.first(), Some(syn::GenericArgument::Type(t))
            if quote!(#t).to_string() == self.elem)
    }

    /// Replaces the first generic argument by the dual type when it is the element type; true
    /// if it did.
    fn retarget(&self, args: &mut syn::AngleBracketedGenericArguments) -> bool {
        let names = self.names_elem(args);
        if names {
            args.args[0] = syn::GenericArgument::Type(self.dual.clone());
        }
        names
    }

    /// True for `Tensor::<E>::ctor` with `ctor` one of [`FROM_VALUES`].
    fn builds_from_values(&self, func: &syn::Expr) -> bool {
        let syn::Expr::Path(p) = func else {
            return false;
        };
        let segments: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
        let [.., tensor, ctor] = segments.as_slice() else {
            return false;
        };
        tensor.ident == "Tensor"
            && matches!(&tensor.arguments, syn::PathArguments::AngleBracketed(args)
                if self.names_elem(args))
            && FROM_VALUES.contains(&ctor.ident.to_string().as_str())
    }
}

impl VisitMut for ToDual {
    fn visit_path_segment_mut(&mut self, seg: &mut syn::PathSegment) {
        if seg.ident == "Tensor" || seg.ident == "cast" {
            if let syn::PathArguments::AngleBracketed(args) = &mut seg.arguments {
                if self.retarget(args) {
                    return;
                }
            }
        }
        syn::visit_mut::visit_path_segment_mut(self, seg);
    }

    fn visit_expr_method_call_mut(&mut self, call: &mut syn::ExprMethodCall) {
        if call.method == "cast" {
            if let Some(args) = &mut call.turbofish {
                self.retarget(args);
            }
        }
        syn::visit_mut::visit_expr_method_call_mut(self, call);
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let syn::Expr::Call(call) = e {
            if self.builds_from_values(&call.func) {
                for arg in &mut call.args {
                    self.visit_expr_mut(arg);
                }
                let dual = &self.dual;
                *e = syn::parse_quote!(#call.cast::<#dual>());
                return;
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }
}
