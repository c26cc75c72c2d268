//! The generated entry points: the hidden `fwd` and `tangent` that callers' passes call, and the
//! public `f_vjp`, `f_jvp`, `f_grad`, `f_value_and_grad`, `f_pullback` and `f_hvp`, written
//! around them; and the stubs written in their place when the function has errors.

use proc_macro2::Span;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::{Ident, ItemFn};

use super::{lints, rt, Emitter, Generated, Host};
use crate::parse::{Returns, Signature};

/// Whether `ty` is a plain number or `bool` (passed by copy).
fn is_copy_number(ty: &syn::Type) -> bool {
    let text = ty.to_token_stream().to_string();
    matches!(
        text.as_str(),
        "f32"
            | "f64"
            | "bool"
            | "usize"
            | "isize"
            | "u8"
            | "u16"
            | "u32"
            | "u64"
            | "i8"
            | "i16"
            | "i32"
            | "i64"
    )
}

impl Emitter<'_> {
    /// `let __rune_expected = ..;`: the plain function's value on the same arguments when values
    /// are checked (`CHECK_VALUES`, debug builds), for [`check_same_value`]. Nothing is checked
    /// for a function with a parameter that cannot be passed twice (`&mut`, or owned and not
    /// known to be `Clone`).
    fn expected_value(&self, turbofish: &syn::Turbofish) -> Option<TokenStream> {
        let rt = rt();
        let mut args = Vec::new();
        for p in &self.sig.params {
            let ident = &p.ident;
            let arg = match &p.ty {
                syn::Type::Reference(r) if r.mutability.is_none() => quote!(#ident),
                syn::Type::Reference(_) => return None,
                _ if p.active.is_some() => quote!(::core::clone::Clone::clone(&#ident)),
                ty if is_copy_number(ty) => quote!(#ident),
                _ => return None,
            };
            args.push(arg);
        }
        let original = self.original_path();
        Some(quote! {
            let __rune_expected = if #rt::CHECK_VALUES && ::core::cfg!(debug_assertions) {
                ::core::option::Option::Some(#original #turbofish (#(#args),*))
            } else {
                ::core::option::Option::None
            };
        })
    }

    /// All generated items: the hidden entry points (for a free function, the items of the
    /// type of its name), then the public ones.
    pub fn emit(&self) -> Generated {
        let rt = rt();
        let f = self.func;
        let vis = &f.vis;
        let name = self.name();
        let generics = &f.sig.generics;
        let (_, ty_generics, where_clause) = generics.split_for_impl();
        let turbofish = ty_generics.as_turbofish();
        let name_str = name.to_string();

        // Parameters as declared (without `#[nodiff]`), keeping `mut` only where the body may
        // need it (constants); wrappers pass every parameter through unchanged.
        let params_decl: Vec<TokenStream> = self
            .sig
            .params
            .iter()
            .map(|p| {
                let (ident, ty) = (&p.ident, &p.ty);
                let m = (p.mutable && p.active.is_none()).then(|| quote!(mut));
                quote!(#m #ident: #ty)
            })
            .collect();
        let params_plain: Vec<TokenStream> = self
            .sig
            .params
            .iter()
            .map(|p| {
                let (ident, ty) = (&p.ident, &p.ty);
                quote!(#ident: #ty)
            })
            .collect();
        let names: Vec<&Ident> = self.sig.params.iter().map(|p| &p.ident).collect();
        let ret = self.sig.return_type();
        let cot_ty = self.sig.cotangent_type();
        let slot_types = self.sig.slot_types();
        let grads_ty = self.sig.grads_type();
        let value_ty = self.sig.value_type();
        let tangent_ty = value_ty.clone();

        let active_indices: Vec<syn::Index> = self
            .sig
            .params
            .iter()
            .enumerate()
            .filter(|(_, p)| p.active.is_some())
            .map(|(i, _)| syn::Index::from(i))
            .collect();
        let grads_from_slots = if active_indices.len() == 1 {
            let i = &active_indices[0];
            quote!(__rune_slots.#i)
        } else {
            quote!((#(__rune_slots.#active_indices,)*))
        };

        // Tangent slots: differentiated parameters take `&Tensor` or `NoTangent`; others ignore
        // theirs.
        let tangent_slots: Vec<TokenStream> = self
            .sig
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let slot = format_ident!("__rune_tangent_{}", i);
                match &p.active {
                    Some(a) if a.structure => {
                        let ty = Signature::grad_type(p);
                        quote!(#slot: impl #rt::StructTangentSlot<#ty>)
                    }
                    Some(a) => {
                        let e = &a.elem;
                        quote!(#slot: impl #rt::TangentSlot<#e>)
                    }
                    None => quote!(#slot: impl #rt::IgnoredTangent),
                }
            })
            .collect();
        let tangent_params: Vec<TokenStream> = self
            .sig
            .active()
            .map(|(p, _)| {
                let t = format_ident!("{}_tangent", p.ident, span = Span::mixed_site());
                let ty = Signature::grad_type(p);
                quote!(#t: &#ty)
            })
            .collect();
        let tangent_args: Vec<TokenStream> = self
            .sig
            .params
            .iter()
            .map(|p| match p.active {
                Some(_) => format_ident!("{}_tangent", p.ident, span = Span::mixed_site())
                    .into_token_stream(),
                None => quote!(#rt::NoTangent),
            })
            .collect();

        let lints = lints();
        let cotangent = Ident::new("cotangent", Span::mixed_site());
        let reverse = self.reverse_body();
        let tangent = match &self.options.custom_jvp {
            Some(rule) => self.custom_tangent_body(rule),
            None => self.tangent_body(),
        };
        let fwd_name = self.hidden_name("fwd");
        let tangent_name = self.hidden_name("tangent");
        let tangent_path = self.hidden_path("tangent");
        // With a custom VJP or a checkpoint, callers reach this function through `fwd`, whose
        // pullback runs the rule or recomputes; its own entry points use the derived pass.
        let derived = if self.options.checkpoint || self.options.custom_vjp.is_some() {
            "fwd_derived"
        } else {
            "fwd"
        };
        let derived_fwd = self.hidden_name(derived);
        let derived_path = self.hidden_path(derived);
        let entry_fwd = if self.options.custom_vjp.is_some() {
            self.hidden_path("fwd")
        } else {
            derived_path.clone()
        };
        let pullback_ty =
            quote!(impl ::core::ops::FnOnce(#cot_ty) -> (#(#slot_types,)*) + ::core::clone::Clone);
        // A function returning `Result<value, E>`: every generated function returns a `Result`.
        let fwd_ret = self.fallible_type(quote!((#ret, #pullback_ty)));
        let tangent_ret = self.fallible_type(quote!((#ret, #tangent_ty)));
        let question = self.question();
        let outer_fwd = match (&self.options.custom_vjp, self.options.checkpoint) {
            (Some(rule), _) => Some(self.custom_pullback_body(rule)),
            (None, true) => Some(self.checkpoint_body(&derived_path)),
            (None, false) => None,
        }
        .map(|body| {
            quote! {
                #[doc(hidden)]
                #lints
                #vis fn #fwd_name #generics (#(#params_decl),*) -> #fwd_ret #where_clause {
                    #body
                }
            }
        });
        // A function generic over its element type serves dual-number twins of its callers
        // directly: its dual entry points are its own.
        let generic_elem = self.sig.active().next().is_some_and(|(_, a)| {
            let e = a.elem.to_token_stream().to_string();
            generics.type_params().any(|t| t.ident == e)
        });
        let dual_aliases = (generic_elem && !self.is_twin).then(|| {
            let (dual_fwd, dual_tangent) = match self.host {
                Host::Free => (format_ident!("dual_fwd"), format_ident!("dual_tangent")),
                Host::Impl => (
                    format_ident!("{}_dual_fwd", name),
                    format_ident!("{}_dual_tangent", name),
                ),
            };
            let fwd_path = self.hidden_path("fwd");
            let tangent_slots = tangent_slots.clone();
            let slot_names: Vec<Ident> = (0..self.sig.params.len())
                .map(|i| format_ident!("__rune_tangent_{}", i))
                .collect();
            quote! {
                #[doc(hidden)]
                #lints
                #vis fn #dual_fwd #generics (#(#params_plain),*) -> #fwd_ret #where_clause {
                    #fwd_path #turbofish (#(#names),*)
                }
                #[doc(hidden)]
                #lints
                #vis fn #dual_tangent #generics (#(#params_plain,)* #(#tangent_slots),*)
                    -> #tangent_ret #where_clause
                {
                    #tangent_path #turbofish (#(#names,)* #(#slot_names),*)
                }
            }
        });
        // The derivatives stand for the original: it counts as used (a twin has none).
        let uses_original = (!self.is_twin).then(|| {
            let original = self.original_path();
            quote!(let _ = #original #turbofish;)
        });
        let has_aux = matches!(self.sig.returns, Returns::Aux { .. });
        let value_of = if has_aux {
            quote!(&__rune_value.0)
        } else {
            quote!(&__rune_value)
        };
        let aux_ty = match &self.sig.returns {
            Returns::Aux { aux, .. } => Some(aux),
            _ => None,
        };
        let grad_ret = match aux_ty {
            Some(aux) => quote!((#grads_ty, #aux)),
            None => grads_ty.clone(),
        };
        let link = self.link();

        let hidden = quote! {
            #[doc(hidden)]
            #lints
            #vis fn #derived_fwd #generics (#(#params_decl),*) -> #fwd_ret #where_clause
            {
                #uses_original
                #reverse
            }

            #outer_fwd

            #dual_aliases

            #[doc(hidden)]
            #lints
            #vis fn #tangent_name #generics (#(#params_decl,)* #(#tangent_slots),*)
                -> #tangent_ret #where_clause
            {
                #uses_original
                #tangent
            }
        };

        // With the `check-values` feature, in debug builds, each public entry point also runs the
        // plain function and checks that it returns exactly its value.
        // A dual-number twin has no plain function of its own to compare with.
        let expected = (!self.is_twin)
            .then(|| self.expected_value(&turbofish))
            .flatten();
        let checks = expected.is_some();
        let check = |variant: &str, value: TokenStream| {
            if !checks {
                return quote!();
            }
            let value = if has_aux {
                quote!(&(#value).0)
            } else {
                quote!(&#value)
            };
            // The plain function's value: inside `Ok` for a function returning a `Result` (an
            // error there is not compared), without the aux.
            let plain = if self.sig.fallible.is_some() {
                quote!(__rune_expected
                    .as_ref()
                    .and_then(|__rune_r| ::core::result::Result::as_ref(__rune_r).ok()))
            } else {
                quote!(__rune_expected.as_ref())
            };
            let expected = if has_aux {
                quote!(#plain.map(|__rune_e| &__rune_e.0))
            } else {
                plain
            };
            quote!(#rt::check_same_value(#name_str, #variant, #expected, #value);)
        };
        let check_vag = check("value_and_grad", quote!(__rune_value));
        let check_vjp = check("vjp", quote!(__rune_value));
        let check_pullback = check("pullback", quote!(__rune_value));
        let check_jvp = check("jvp", quote!(__rune_out.0));
        // The value and the gradients, `(__rune_value, __rune_grads)`.
        let value_and_grads = quote! {
            #expected
            let (__rune_value, __rune_pullback) = #entry_fwd #turbofish (#(#names),*) #question;
            #check_vag
            let __rune_seed = #rt::scalar_seed(#name_str, #value_of);
            let __rune_slots = __rune_pullback(&__rune_seed);
            let __rune_grads = #grads_from_slots;
        };
        let grad_out = self.ok(if has_aux {
            quote!((__rune_grads, __rune_value.1))
        } else {
            quote!(__rune_grads)
        });
        let grad_ret = self.fallible_type(grad_ret);
        let vag_ret = self.fallible_type(quote!((#ret, #grads_ty)));
        let vag_out = self.ok(quote!((__rune_value, __rune_grads)));
        let pullback_ret =
            self.fallible_type(quote!((#ret, impl ::core::ops::Fn(#cot_ty) -> #grads_ty)));
        let vjp_ret = self.fallible_type(quote!((#ret, #grads_ty)));
        let pullback_out = self.ok(quote! {
            (__rune_value, move |#cotangent: #cot_ty| {
                let __rune_slots = ::core::clone::Clone::clone(&__rune_pullback)(#cotangent);
                #grads_from_slots
            })
        });
        let vjp_out = self.ok(quote!((__rune_value, #grads_from_slots)));
        let jvp_out = self.ok(quote!(__rune_out));
        // A twin has only what `f_hvp` runs: its gradient, hidden.
        if self.is_twin {
            let grad_name = self.hidden_name("grad");
            return Generated {
                hidden: quote! {
                    #hidden

                    #[doc(hidden)]
                    #lints
                    #vis fn #grad_name #generics (#(#params_plain),*) -> #grad_ret #where_clause {
                        #value_and_grads
                        #grad_out
                    }
                },
                public: quote!(),
            };
        }

        // Gradients need a one-element value: tuple-valued functions get `f_vjp` and `f_jvp` only.
        let vag_name = self.public_name("value_and_grad");
        let grad_name = self.public_name("grad");
        let doc_vag =
            format!(" The value of {link} and its gradient (the value must have one element).");
        let doc_grad = format!(" The gradient of {link} (whose value must have one element).");
        let scalar_entry_points = (!matches!(self.sig.returns, Returns::Tuple(_))).then(|| {
            quote! {
                #[doc = #doc_vag]
                #lints
                #[track_caller]
                #vis fn #vag_name #generics (#(#params_plain),*) -> #vag_ret #where_clause {
                    #value_and_grads
                    #vag_out
                }

                #[doc = #doc_grad]
                #lints
                #[track_caller]
                #vis fn #grad_name #generics (#(#params_plain),*) -> #grad_ret #where_clause {
                    #value_and_grads
                    #grad_out
                }
            }
        });

        let hvp = self.hvp(&lints);
        let pullback_name = self.public_name("pullback");
        let vjp_name = self.public_name("vjp");
        let jvp_name = self.public_name("jvp");
        let doc_pullback = format!(" The value of {link} and its pullback: a function that takes a cotangent of the value's shape and returns the gradients, callable many times (the forward pass runs once).");
        let doc_vjp = format!(" Reverse mode of {link}: its value and the cotangent pulled back to each differentiated parameter.");
        let doc_jvp = format!(" Forward mode of {link}: its value and the directional derivative along the given tangents.");
        let public = quote! {
            #hvp

            #[doc = #doc_pullback]
            #lints
            #vis fn #pullback_name #generics (#(#params_plain),*)
                -> #pullback_ret #where_clause
            {
                #expected
                let (__rune_value, __rune_pullback) = #entry_fwd #turbofish (#(#names),*) #question;
                #check_pullback
                #pullback_out
            }

            #[doc = #doc_vjp]
            #lints
            #[track_caller]
            #vis fn #vjp_name #generics (#(#params_plain,)* #cotangent: #cot_ty)
                -> #vjp_ret #where_clause
            {
                #expected
                let (__rune_value, __rune_pullback) = #entry_fwd #turbofish (#(#names),*) #question;
                #check_vjp
                #rt::check_cotangent(#name_str, #value_of, &#cotangent);
                let __rune_slots = __rune_pullback(#cotangent);
                #vjp_out
            }

            #[doc = #doc_jvp]
            #lints
            #vis fn #jvp_name #generics (#(#params_plain,)* #(#tangent_params),*)
                -> #tangent_ret #where_clause
            {
                #expected
                let __rune_out = #tangent_path #turbofish (#(#names,)* #(#tangent_args),*) #question;
                #check_jvp
                #jvp_out
            }

            #scalar_entry_points
        };
        Generated { hidden, public }
    }

    /// Signatures with `unreachable!()` bodies, emitted beside the errors so that callers do not
    /// see a cascade of missing-function errors.
    pub fn stubs(func: &ItemFn, sig: &Signature, host: Host) -> Generated {
        let rt = rt();
        let vis = &func.vis;
        let name = &func.sig.ident;
        let generics = &func.sig.generics;
        let where_clause = &generics.where_clause;
        let params: Vec<TokenStream> = sig
            .params
            .iter()
            .map(|p| {
                let (i, t) = (&p.ident, &p.ty);
                quote!(#i: #t)
            })
            .collect();
        let ret = sig.return_type();
        let cot = sig.cotangent_type();
        let slots = sig.slot_types();
        let grads = sig.grads_type();
        let value_ty = sig.value_type();
        let tangent_params: Vec<TokenStream> = sig
            .active()
            .map(|(p, _)| {
                let t = format_ident!("{}_tangent", p.ident);
                let ty = Signature::grad_type(p);
                quote!(#t: &#ty)
            })
            .collect();
        let tangent_slots: Vec<TokenStream> = sig
            .params
            .iter()
            .enumerate()
            .map(|(i, _)| {
                let slot = format_ident!("__rune_tangent_{}", i);
                quote!(#slot: impl #rt::IgnoredTangent)
            })
            .collect();
        let public = |suffix: &str| format_ident!("{}_{}", name, suffix);
        let hidden = |kind: &str| match host {
            Host::Free => format_ident!("{}", kind),
            Host::Impl => format_ident!("{}_{}", name, kind),
        };
        let (fwd, tan, vjp, jvp, grad, vag, pullback) = (
            hidden("fwd"),
            hidden("tangent"),
            public("vjp"),
            public("jvp"),
            public("grad"),
            public("value_and_grad"),
            public("pullback"),
        );
        let grad_ret = match &sig.returns {
            Returns::Aux { aux, .. } => quote!((#grads, #aux)),
            _ => grads.clone(),
        };
        let lints = quote!(#[allow(unused, unreachable_code, clippy::all)]);
        // The same types as the real items, `Result`s for a function returning one.
        let wrap = |ty: TokenStream| match &sig.fallible {
            Some(e) => quote!(::core::result::Result<#ty, #e>),
            None => ty,
        };
        let ok = |e: TokenStream| match &sig.fallible {
            Some(_) => quote!(::core::result::Result::Ok(#e)),
            None => e,
        };
        let fwd_ret = wrap(
            quote!((#ret, impl ::core::ops::FnOnce(#cot) -> (#(#slots,)*) + ::core::clone::Clone)),
        );
        let fwd_body = ok(quote!((::core::unreachable!(), |_: #cot| ::core::unreachable!())));
        let tangent_ret = wrap(quote!((#ret, #value_ty)));
        let grads_ret = wrap(quote!((#ret, #grads)));
        let grad_ret = wrap(grad_ret);
        let pullback_ret = wrap(quote!((#ret, impl ::core::ops::Fn(#cot) -> #grads)));
        let pullback_body = ok(quote!((::core::unreachable!(), |_: #cot| ::core::unreachable!())));
        Generated {
            hidden: quote! {
                #[doc(hidden)] #lints
                #vis fn #fwd #generics (#(#params),*) -> #fwd_ret #where_clause {
                    #fwd_body
                }
                #[doc(hidden)] #lints
                #vis fn #tan #generics (#(#params,)* #(#tangent_slots),*) -> #tangent_ret #where_clause { ::core::unreachable!() }
            },
            public: quote! {
                #lints
                #vis fn #vjp #generics (#(#params,)* cotangent: #cot) -> #grads_ret #where_clause { ::core::unreachable!() }
                #lints
                #vis fn #jvp #generics (#(#params,)* #(#tangent_params),*) -> #tangent_ret #where_clause { ::core::unreachable!() }
                #lints
                #vis fn #vag #generics (#(#params),*) -> #grads_ret #where_clause { ::core::unreachable!() }
                #lints
                #vis fn #grad #generics (#(#params),*) -> #grad_ret #where_clause { ::core::unreachable!() }
                #lints
                #vis fn #pullback #generics (#(#params),*) -> #pullback_ret #where_clause {
                    #pullback_body
                }
            },
        }
    }
}
