//! `f_hvp`: the gradient and Hessian-vector products, forward over reverse (the reverse pass run
//! on dual numbers). The dual-number twin of a function on a concrete element type is made by
//! its own stage (`crate::twin`); this runs its gradient.

use proc_macro2::Span;
use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::Ident;

use super::{lints, rt, Api, Emitter, Host};
use crate::names::hidden;
use crate::parse::{contains_tensor_of, contains_type, single_ident, Param, Returns, Signature};

impl<'a> Api<'a> {
    /// The element type that `f_hvp` runs on dual numbers, and whether the function is generic
    /// over it; `None` when the function gets no `f_hvp`. A function generic over its element
    /// type gets it as it is; a function on a concrete element type through its dual-number
    /// twin.
    pub(super) fn hvp_elem(&self) -> Option<(syn::Type, bool)> {
        let (elem, generic) = self.hvp_shape()?;
        if self.is_twin || (!generic && !self.hvp_twin) {
            return None;
        }
        if generic && cast_off(self.func, &elem).is_some() {
            return None;
        }
        Some((elem, generic))
    }

    /// The element type and whether the function is generic over it, for a function whose shape
    /// allows `f_hvp` (one value, not a twin), whatever its options. A structure parameter
    /// needs a function generic over the element type, which its type names (`m: &Mlp<T>`):
    /// `f_hvp` runs it on `Mlp<Dual<T>>` (its derive seeds and splits it).
    fn hvp_shape(&self) -> Option<(syn::Type, bool)> {
        if !matches!(self.sig.returns, Returns::Single(_)) {
            return None;
        }
        let structures = self.sig.active().any(|(_, a)| a.structure);
        if let Some((_, first)) = self.sig.active().find(|(_, a)| !a.structure) {
            let generic = self.generic_over(&first.elem) || self.block_param(&first.elem);
            return (generic || !structures).then(|| (first.elem.clone(), generic));
        }
        // The element: a type parameter bounded by `Element` that the structure's type names
        // among its arguments (not a type parameter that is the structure, `m: &M`), declared
        // by the function or by its `impl` block.
        let (p, _) = self.sig.active().next()?;
        let ty = self.resolved(&p.ty);
        let named = quote!(#ty).to_string();
        let block = self.inherent.map(|i| &i.generics);
        let all = || {
            self.func
                .sig
                .generics
                .params
                .iter()
                .chain(block.into_iter().flat_map(|g| &g.params))
        };
        let type_params = || {
            all().filter_map(|g| match g {
                syn::GenericParam::Type(t) => Some(t),
                _ => None,
            })
        };
        let element_bound = |ident: &syn::Ident| {
            let inline = type_params()
                .filter(|t| t.ident == *ident)
                .flat_map(|t| &t.bounds);
            let clauses = std::iter::once(&self.func.sig.generics)
                .chain(block)
                .flat_map(|g| &g.where_clause)
                .flat_map(|w| &w.predicates)
                .filter_map(|pred| match pred {
                    syn::WherePredicate::Type(t) if single_ident(&t.bounded_ty) == Some(ident) => {
                        Some(&t.bounds)
                    }
                    _ => None,
                })
                .flatten();
            inline.chain(clauses).any(|b| {
                matches!(b, syn::TypeParamBound::Trait(t)
                    if t.path.segments.last().is_some_and(|s| s.ident == "Element"))
            })
        };
        let t = type_params().find(|t| {
            element_bound(&t.ident)
                && named
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .any(|word| t.ident == word)
        })?;
        let ident = &t.ident;
        Some((syn::parse_quote!(#ident), true))
    }

    /// The type parameter `T` that `f_hvp` runs on dual numbers, and `Dual<T>`; `None` for a
    /// function on a concrete element type.
    fn generic_elem_and_dual(&self) -> Option<(Ident, syn::Type)> {
        let Some((elem, true)) = self.hvp_elem() else {
            return None;
        };
        let t = single_ident(&elem)?.clone();
        let rt = rt();
        let dual = syn::parse_quote!(#rt::Dual<#t>);
        Some((t, dual))
    }

    /// What `f_hvp` needs of each structure parameter (`m: &Mlp<T>`): to be seeded as
    /// `Mlp<Dual<T>>` and split back (`#[derive(Differentiable)]` writes both for a structure
    /// generic over its element type).
    pub(super) fn hvp_bounds(&self) -> Vec<syn::WherePredicate> {
        let Some((t, dual)) = self.generic_elem_and_dual() else {
            return Vec::new();
        };
        let rt = rt();
        let mut bounds = Vec::new();
        for (p, _) in self.sig.active().filter(|(_, a)| a.structure) {
            let ty = match self.resolved(&p.ty) {
                syn::Type::Reference(r) => (*r.elem).clone(),
                ty => ty,
            };
            let mut on_duals = ty.clone();
            syn::visit_mut::VisitMut::visit_type_mut(&mut SwapElem(&t, &dual), &mut on_duals);
            bounds.push(syn::parse_quote!(#ty: #rt::DualSeed<Direction = #ty, Dual = #on_duals>));
            bounds.push(syn::parse_quote!(#on_duals: #rt::DualParts<Real = #ty>));
        }
        bounds
    }

    /// [`Self::hvp_bounds`] one level of dual numbers up (`Mlp<Dual<T>>` seeded as
    /// `Mlp<Dual<Dual<T>>>`): what running `f_hvp` itself on dual numbers needs.
    pub(super) fn hvp_bounds_on_duals(&self) -> Vec<syn::WherePredicate> {
        let Some((t, dual)) = self.generic_elem_and_dual() else {
            return Vec::new();
        };
        let mut bounds = self.hvp_bounds();
        for bound in &mut bounds {
            syn::visit_mut::VisitMut::visit_where_predicate_mut(&mut SwapElem(&t, &dual), bound);
        }
        bounds
    }

    /// Whether `elem` is one of the function's type parameters.
    pub(super) fn generic_over(&self, elem: &syn::Type) -> bool {
        single_ident(elem)
            .is_some_and(|e| self.func.sig.generics.type_params().any(|t| t.ident == *e))
    }

    /// Whether `elem` is a type parameter of the method's inherent `impl` block (see
    /// [`Inherent`](super::Inherent)).
    fn block_param(&self, elem: &syn::Type) -> bool {
        let block = self.inherent.map(|i| &i.generics);
        single_ident(elem)
            .is_some_and(|e| block.is_some_and(|g| g.type_params().any(|t| t.ident == *e)))
    }

    /// For a method of an inherent block generic over the element type `elem`
    /// (`impl<T: Element> Critic<T>`), the block's type on dual numbers (`Critic<Dual<T>>`),
    /// whose methods run this one on them.
    pub(super) fn block_on_duals(&self, elem: &syn::Type) -> Option<syn::Type> {
        let inherent = self.inherent.filter(|_| self.host == Host::Impl)?;
        if self.generic_over(elem) {
            return None;
        }
        let t = single_ident(elem)?;
        let rt = rt();
        let dual: syn::Type = syn::parse_quote!(#rt::Dual<#t>);
        let mut on_duals = inherent.self_ty.clone();
        syn::visit_mut::VisitMut::visit_type_mut(&mut SwapElem(t, &dual), &mut on_duals);
        Some(on_duals)
    }

    /// `ty` with `Self` written as the inherent `impl` block's type (`&Self` → `&Critic<T>`),
    /// which a bound can swap the element type of.
    pub(super) fn resolved(&self, ty: &syn::Type) -> syn::Type {
        let mut ty = ty.clone();
        if let Some(inherent) = self.inherent {
            let this = Ident::new("Self", Span::call_site());
            syn::visit_mut::VisitMut::visit_type_mut(
                &mut SwapElem(&this, &inherent.self_ty),
                &mut ty,
            );
        }
        ty
    }

    /// For a function on a concrete element type that would get `f_hvp` with the `hvp` option
    /// but was not given it: a hidden `f_hvp` with the real signature whose every call is an
    /// error saying to add the option, where the call would otherwise find no function. Its
    /// bound names a lifetime of the function, so rustc checks it at each call and not at the
    /// definition; nothing implements the trait, so the body never runs.
    ///
    /// The same for a generic function that casts to an element type other than its own: its
    /// `f_hvp` would run it on `Dual<T>`, and the cast to a real type would drop the tangents,
    /// a second derivative silently missing; the error says why and what to write instead.
    pub(super) fn hvp_opt_in(&self) -> Option<TokenStream> {
        let (elem, generic) = self.hvp_shape()?;
        if self.is_twin {
            return None;
        }
        let rt = rt();
        let cast = if generic {
            cast_off(self.func, &elem)
        } else {
            None
        };
        let bound: syn::WherePredicate = match (generic, self.hvp_twin, cast) {
            // Spanned at the cast, which the error's "required by this bound" then shows.
            (true, _, Some(at)) => syn::parse_quote_spanned!(at=>
                &'__rune_opt_in #rt::CastOffTheElementType: #rt::HvpThroughCast),
            (false, false, _) => {
                syn::parse_quote!(&'__rune_opt_in #rt::WithoutHvpOption: #rt::HvpOptIn)
            }
            _ => return None,
        };
        let lifetime = syn::Lifetime::new("'__rune_opt_in", Span::mixed_site());
        let mut generics = self.func.sig.generics.clone();
        generics.params.insert(
            0,
            syn::GenericParam::Lifetime(syn::LifetimeParam::new(lifetime.clone())),
        );
        generics.make_where_clause().predicates.push(bound);
        let where_clause = &generics.where_clause;
        let params = self.sig.params.iter().map(|p| {
            let (ident, ty) = (&p.ident, &p.ty);
            quote!(#ident: #ty)
        });
        let directions = self.hvp_directions();
        let grads_ty = self.sig.grads_type();
        let vis = &self.func.vis;
        let name = self.public_name("hvp");
        let lints = lints();
        Some(quote! {
            #[doc(hidden)]
            #lints
            #vis fn #name #generics (#(#params,)* #(#directions),*) -> (#grads_ty, #grads_ty) #where_clause {
                ::core::unreachable!()
            }
        })
    }

    /// The parameters of `f_hvp` after the function's: a direction for each differentiated one.
    pub(super) fn hvp_directions(&self) -> Vec<TokenStream> {
        self.sig
            .active()
            .map(|(p, _)| {
                let d = direction(p);
                let ty = Signature::grad_type(p);
                quote!(#d: &#ty)
            })
            .collect()
    }
}

/// Where `func`'s body first casts a tensor to an element type other than `elem` (`.cast::<f64>()`
/// or `Tensor::cast::<f64>(..)` in a function generic over `T`), if it does.
pub fn cast_off(func: &syn::ItemFn, elem: &syn::Type) -> Option<Span> {
    struct Casts<'e> {
        elem: &'e syn::Type,
        found: Option<Span>,
    }
    impl Casts<'_> {
        fn check(&mut self, args: &syn::AngleBracketedGenericArguments) {
            if let Some(syn::GenericArgument::Type(target)) = args.args.first() {
                if target != self.elem && self.found.is_none() {
                    self.found = Some(target.span());
                }
            }
        }
    }
    impl<'ast> Visit<'ast> for Casts<'_> {
        fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
            if let (true, Some(args)) = (call.method == "cast", &call.turbofish) {
                self.check(args);
            }
            syn::visit::visit_expr_method_call(self, call);
        }
        fn visit_path_segment(&mut self, seg: &'ast syn::PathSegment) {
            if let (true, syn::PathArguments::AngleBracketed(args)) =
                (seg.ident == "cast", &seg.arguments)
            {
                self.check(args);
            }
            syn::visit::visit_path_segment(self, seg);
        }
    }
    let mut casts = Casts { elem, found: None };
    casts.visit_block(&func.block);
    casts.found
}

/// The parameter of `f_hvp` holding the direction of differentiated parameter `p`.
fn direction(p: &Param) -> Ident {
    format_ident!("{}_direction", p.ident, span = Span::mixed_site())
}

impl Emitter<'_> {
    /// The body of `f_hvp` (forward over reverse): `f_grad` run on dual numbers whose tangents
    /// are the directions.
    pub(super) fn hvp_body(&self) -> TokenStream {
        let rt = rt();
        let api = self.api();
        let (elem, generic) = api.hvp_elem().expect("a function with `f_hvp`");
        let elem = &elem;
        let elem_ident = single_ident(elem);
        let generics = &self.func.sig.generics;
        let name = api.name();
        let (_, ty_generics, _) = generics.split_for_impl();
        // A concrete function's gradient on dual numbers is its twin's.
        let grad_path = match (generic, api.block_on_duals(elem)) {
            // A method of `impl<T: Element> Critic<T>`: the block's type at `Dual<T>`.
            (true, Some(on_duals)) => {
                let item = api.public_name("grad");
                quote!(<#on_duals>::#item)
            }
            (true, None) => api.public_path("grad"),
            (false, _) if self.host == Host::Free => quote!(#name::dual_grad),
            (false, _) => {
                let item = format_ident!("{}_dual_grad", name);
                quote!(Self::#item)
            }
        };
        // The turbofish instantiating the element type with its dual numbers.
        let args: Vec<TokenStream> = generics
            .params
            .iter()
            .filter_map(|g| match g {
                syn::GenericParam::Type(t) if Some(&t.ident) == elem_ident => {
                    Some(quote!(#rt::Dual<#elem>))
                }
                syn::GenericParam::Type(t) => Some(t.ident.to_token_stream()),
                syn::GenericParam::Const(c) => Some(c.ident.to_token_stream()),
                syn::GenericParam::Lifetime(_) => None,
            })
            .collect();
        // Generic: every parameter whose type names the element type is lifted. Concrete: the
        // twin takes `Tensor<Dual<E>>` where the function takes `Tensor<E>`, and plain scalars.
        let mentions_elem = |ty: &syn::Type| {
            if generic {
                contains_type(ty, elem)
            } else {
                contains_tensor_of(ty, elem)
            }
        };
        let is_elem = |ty: &syn::Type| {
            let ty = match ty {
                syn::Type::Reference(r) => &*r.elem,
                ty => ty,
            };
            ty == elem
        };
        let mut lifts = Vec::new();
        let mut call_args = Vec::new();
        for (i, p) in self.sig.params.iter().enumerate() {
            let ident = &p.ident;
            let lifted = hidden(&format!("dual{i}"));
            let (borrowed, reference) = match &p.ty {
                syn::Type::Reference(_) => (true, quote!(#ident)),
                _ => (false, quote!(&#ident)),
            };
            match &p.active {
                Some(_) => {
                    let d = direction(p);
                    lifts.push(quote!(let #lifted = #rt::dual_seed(#reference, #d);));
                }
                // A scalar of a generic element type is a dual constant; any other type that
                // names the element (a tensor of it, a concrete scalar) lifts by `Lift`.
                None if generic && is_elem(&p.ty) => {
                    lifts.push(quote!(let #lifted = #rt::lift_element(#reference);));
                }
                None if mentions_elem(&p.ty) => {
                    lifts.push(quote!(let #lifted = #rt::Lift::lift(#reference);));
                }
                None => {
                    call_args.push(quote!(#ident));
                    continue;
                }
            }
            call_args.push(if borrowed {
                quote!(&#lifted)
            } else {
                quote!(#lifted)
            });
        }
        let call_turbofish = if generic && args.is_empty() {
            TokenStream::new()
        } else if generic {
            quote!(::<#(#args),*>)
        } else {
            ty_generics.as_turbofish().to_token_stream()
        };
        let n_active = self.sig.active().count();
        let (grads_out, hvps_out) = if n_active == 1 {
            (
                quote!(#rt::dual_primal(&__rune_dual_grads)),
                quote!(#rt::dual_tangent(&__rune_dual_grads)),
            )
        } else {
            let idx: Vec<syn::Index> = (0..n_active).map(syn::Index::from).collect();
            (
                quote!((#(#rt::dual_primal(&__rune_dual_grads.#idx),)*)),
                quote!((#(#rt::dual_tangent(&__rune_dual_grads.#idx),)*)),
            )
        };
        quote! {
            #(#lifts)*
            let __rune_dual_grads = #grad_path #call_turbofish (#(#call_args),*);
            (#grads_out, #hvps_out)
        }
    }
}

/// Replaces the type parameter `.0` by the type `.1` in a type.
struct SwapElem<'a>(&'a Ident, &'a syn::Type);

impl syn::visit_mut::VisitMut for SwapElem<'_> {
    fn visit_type_mut(&mut self, ty: &mut syn::Type) {
        if matches!(ty, syn::Type::Path(p) if p.qself.is_none() && p.path.is_ident(self.0)) {
            *ty = self.1.clone();
            return;
        }
        syn::visit_mut::visit_type_mut(self, ty);
    }
}
