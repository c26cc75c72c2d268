//! Emission: the derivative functions, written with `quote!`.
//!
//! For a function `f` this writes
//! - `fwd` (hidden): the forward pass, returning the value and a pullback closure that owns
//!   exactly the residuals its rules read and returns one gradient slot per parameter;
//! - `tangent` (hidden): the forward pass with each op followed by its tangent rule, taking
//!   one tangent slot per parameter;
//! - the public `f_vjp`, `f_grad`, `f_value_and_grad`, `f_jvp` and `f_pullback`, thin wrappers
//!   of those two.
//!
//! Beside a free function the hidden entry points are associated functions of a type named `f`
//! (`f::fwd`); in an `impl` block, associated functions `f_fwd`, `f_tangent` (see [`Host`]).
//!
//! One file a job: [`api`] writes the entry points (and the stubs that stand in for them when
//! the function has errors) around the bodies that [`backward`] (`fwd`: forward pass, then the
//! pullback), [`tangent`] (`tangent`), [`variants`] (`custom_vjp`, `custom_jvp`, `checkpoint`)
//! and [`hvp`] (`f_hvp`) make. The passes walk the IR in [`forward`] and [`backward`], with
//! [`rule`] writing each op and its rules, [`residuals`] what the forward pass saves, [`calls`]
//! calls of other functions, and [`tokens`] the token utilities.

mod api;
mod backward;
mod calls;
mod carrier;
mod dual_callee;
mod forward;
mod fused;
mod hvp;
mod nested;
mod objects;
mod residuals;
mod rule;
mod tangent;
mod tokens;
mod traits;
mod variants;

use std::cell::RefCell;

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::{Ident, ItemFn};

use self::carrier::Carrier;
pub use self::dual_callee::{dual_callee, DualCallee};
pub use self::hvp::cast_off;
pub use self::nested::{grad_function, jvp_function, value_and_grad_function, Site};
pub use self::objects::{object_items, object_trait, ObjectMethod};
pub use self::traits::trait_declarations;
use crate::analyse::Analysis;
use crate::ir::{Body, PathSeg, Slot, Val};
use crate::lower::path_place;
use crate::names::{const_ident, residual_ident};
use crate::parse::{Options, Signature};

const RT: &str = "::rune_ad::__private";

fn rt() -> TokenStream {
    RT.parse().expect("path parses")
}

/// Where a function's generated items live.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// A free function `f`: the public entry points (`f_vjp`, ..) are functions beside it, the
    /// hidden ones (`fwd`, `tangent`) associated functions of a type `f` of the same name, which
    /// `use a::f;` imports together with the function.
    Free,
    /// A method or associated function in an `impl` block: every entry point is an associated
    /// function of the same block (`Self::f_vjp`, `Self::f_fwd`).
    Impl,
}

/// Everything the emitter needs.
pub struct Emitter<'a> {
    pub func: &'a ItemFn,
    pub sig: &'a Signature,
    pub body: &'a Body,
    pub analysis: &'a Analysis,
    pub options: &'a Options,
    /// A dual-number twin of this concrete function is generated (`hvp` option): `f_hvp` then
    /// runs the twin's gradient.
    pub hvp_twin: bool,
    /// This is the twin itself: its calls go to other functions' dual entry points.
    pub is_twin: bool,
    /// Every value is a number (`crate::numbers`): the runtime's number functions stand in for
    /// the tensor ones.
    pub numbers: bool,
    /// Where the generated items go.
    pub host: Host,
    /// A method of a trait or of a trait impl: what its entry points capture and require.
    pub trait_method: Option<&'a TraitMethod>,
    /// A method of an inherent `impl` block under the attribute (see [`Inherent`]).
    pub inherent: Option<&'a Inherent>,
    /// The fused regions' fn items, each written once (see [`Emitter::region_items`]).
    pub regions: RefCell<fused::RegionItems>,
}

/// The place `base.field[index]..` of a path in a structure's tangent (with the forward pass's
/// index constants) or gradient (mutable, with the backward pass's saved copies).
fn struct_place(base: &Ident, path: &[PathSeg], backward: bool) -> TokenStream {
    path_place(
        base.to_token_stream(),
        path,
        if backward {
            residual_ident
        } else {
            const_ident
        },
        backward,
    )
}

/// `&[&element, ..]` of a list, as `stack` and `concat` take it.
fn list_refs(ident: &Ident) -> TokenStream {
    quote!(&#ident.iter().collect::<::std::vec::Vec<_>>())
}

/// Which emission a walk produces.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `f_fwd`: the primal, saving what the backward pass reads.
    Reverse,
    /// `f_tangent`: the primal with each op followed by its tangent rule.
    Tangent,
    /// The plain function of a fused body: the primal alone (`Emitter::plain_body`).
    Value,
}

impl<'a> Emitter<'a> {
    /// The tangent of structure `root` in forward mode: a parameter's, or the tangent the
    /// callee returned for a call's result read as a structure.
    fn struct_tangent_base(&self, root: usize) -> Ident {
        match self.body.call_roots.get(&root) {
            Some(out) => crate::names::tangent_ident(*out),
            None => crate::names::struct_tangent_ident(root),
        }
    }

    fn useful(&self, v: Val) -> bool {
        self.analysis.is_useful(v)
    }

    /// Runtime function `name` of the tensor form, or in a function of numbers its twin on
    /// numbers (`rune_runtime::generated::number_map` for `fused_map`, ..).
    fn glue(&self, name: &str) -> TokenStream {
        self.carrier().glue(name)
    }

    /// What a differentiated value is in this function's generated code.
    fn carrier(&self) -> Carrier {
        Carrier::of(self.numbers)
    }

    fn optional(&self, s: Slot) -> bool {
        self.body.output_slots.contains(&s)
    }

    /// The names and declarations of this function's entry points.
    fn api(&self) -> Api<'a> {
        Api {
            func: self.func,
            sig: self.sig,
            host: self.host,
            is_twin: self.is_twin,
            hvp_twin: self.hvp_twin,
            trait_method: self.trait_method,
            inherent: self.inherent,
        }
    }
}

/// An inherent `impl` block under `#[differentiable]`: its type and generics. Its methods are
/// generic over an element type the block declares (`impl<T: Element> Critic<T>`), so they get
/// `f_hvp` as generic functions do, run on `Critic<Dual<T>>`; a method under the attribute alone
/// cannot see the block, and gets none.
pub struct Inherent {
    pub self_ty: syn::Type,
    pub generics: syn::Generics,
}

/// What a function's entry points are named and declared from: its signature and where its
/// items go, not its body (the stubs written for a function with errors have none).
#[derive(Clone, Copy)]
struct Api<'a> {
    func: &'a ItemFn,
    sig: &'a Signature,
    host: Host,
    /// Declaring a dual-number twin (see [`Emitter::is_twin`]).
    is_twin: bool,
    /// A function on a concrete element type whose `f_hvp` runs its dual-number twin (see
    /// [`Emitter::hvp_twin`]).
    hvp_twin: bool,
    /// See [`Emitter::trait_method`].
    trait_method: Option<&'a TraitMethod>,
    /// See [`Emitter::inherent`].
    inherent: Option<&'a Inherent>,
}

impl<'a> Api<'a> {
    /// The function's name.
    fn name(&self) -> &'a Ident {
        &self.func.sig.ident
    }

    /// Entry point `kind` (`fwd`, `tangent`) as this emission writes and calls it: `dual_fwd`
    /// and so on in a dual-number twin.
    fn kind(&self, kind: &str) -> String {
        if self.is_twin {
            format!("dual_{kind}")
        } else {
            kind.to_owned()
        }
    }

    /// The declared name of hidden entry point `kind` (`fwd`, `tangent`, `fwd_derived`).
    fn hidden_name(&self, kind: &str) -> Ident {
        let kind = self.kind(kind);
        match self.host {
            Host::Free => format_ident!("{}", kind),
            Host::Impl => format_ident!("{}_{}", self.name(), kind),
        }
    }

    /// `Self`, or in a trait impl `<Self as Trait>`: a type may have an inherent method of the
    /// same name (an inherent `forward` beside `Layer::forward`), which `Self::forward` names.
    fn self_path(&self) -> TokenStream {
        match self.trait_method.and_then(|t| t.path.as_ref()) {
            Some(path) => quote!(<Self as #path>),
            None => quote!(Self),
        }
    }

    /// The path that calls hidden entry point `kind` (see [`Self::hidden_name`]).
    fn hidden_path(&self, kind: &str) -> TokenStream {
        self.item_path(&self.hidden_name(kind))
    }

    /// The path of hidden item `item`: beside a free function `f`, `f::item`; in an `impl` block,
    /// `Self::item` (see [`Self::self_path`]).
    fn item_path(&self, item: &Ident) -> TokenStream {
        match self.host {
            Host::Free => {
                let name = self.name();
                quote!(#name::#item)
            }
            Host::Impl => {
                let this = self.self_path();
                quote!(#this::#item)
            }
        }
    }

    /// The name of public entry point `f_suffix`.
    fn public_name(&self, suffix: &str) -> Ident {
        format_ident!("{}_{}", self.name(), suffix)
    }

    /// The path that calls public entry point `f_suffix`.
    fn public_path(&self, suffix: &str) -> TokenStream {
        let item = self.public_name(suffix);
        match self.host {
            Host::Free => quote!(#item),
            Host::Impl => {
                let this = self.self_path();
                quote!(#this::#item)
            }
        }
    }

    /// The path of the function itself.
    fn original_path(&self) -> TokenStream {
        let name = self.name();
        match self.host {
            Host::Free => quote!(#name),
            Host::Impl => {
                let this = self.self_path();
                quote!(#this::#name)
            }
        }
    }

    /// `Ok(result)` for a function returning a `Result`, else `result`.
    fn ok(&self, result: TokenStream) -> TokenStream {
        match self.sig.fallible {
            Some(_) => quote!(::core::result::Result::Ok(#result)),
            None => result,
        }
    }

    /// `?` after a call of a generated function of a function returning a `Result`.
    fn question(&self) -> Option<TokenStream> {
        self.sig.fallible.as_ref().map(|_| quote!(?))
    }

    /// `ty`, or `Result<ty, E>` for a function returning a `Result`.
    fn fallible_type(&self, ty: TokenStream) -> TokenStream {
        match &self.sig.fallible {
            Some(e) => quote!(::core::result::Result<#ty, #e>),
            None => ty,
        }
    }

    /// An intra-doc link to the function.
    fn link(&self) -> String {
        match self.host {
            Host::Free => format!("[`{}`]", self.name()),
            Host::Impl => format!("[`Self::{}`]", self.name()),
        }
    }
}

/// What the entry points of a method of a trait, or of a trait impl, capture and require.
#[derive(Clone)]
pub struct TraitMethod {
    /// `use<..>`, added to each `impl Trait` they return (a pullback): the impl's type and const
    /// parameters, or `Self` in the trait itself, and the method's, but none of the lifetimes.
    /// A pullback owns what it reads; by default the `impl Trait` a trait's method returns
    /// would capture the lifetime of `&self` and of each borrowed argument, and a caller's
    /// pullback holding it could not be returned. (Elsewhere a returned `impl Trait` captures
    /// no lifetime it is not told to.)
    captures: syn::TypeParamBound,
    /// The trait, in a trait impl.
    path: Option<syn::Path>,
    /// In the trait itself, `Self: Sized`, which keeps the trait dyn-compatible (the entry points
    /// return `impl Trait`), and `Self: Differentiable` where `self` is differentiated.
    bounds: Vec<syn::WherePredicate>,
}

impl TraitMethod {
    /// Whether the method is in an impl of the trait (not the trait's own provided method).
    pub fn in_impl(&self) -> bool {
        self.path.is_some()
    }

    /// `method` of an impl of trait `path` whose generics are `outer` (`Some(path)`), or of the
    /// trait itself (`None`), whose generics are `outer` where known (under the attribute on the
    /// trait, not on a method alone).
    pub fn new(
        path: Option<&syn::Path>,
        outer: Option<&syn::Generics>,
        method: &ItemFn,
    ) -> TraitMethod {
        let in_trait = path.is_none();
        let params = outer
            .into_iter()
            .chain([&method.sig.generics])
            .flat_map(|g| &g.params)
            .filter_map(|p| match p {
                syn::GenericParam::Type(t) => Some(&t.ident),
                syn::GenericParam::Const(c) => Some(&c.ident),
                syn::GenericParam::Lifetime(_) => None,
            });
        let this = in_trait.then(|| quote!(Self,));
        let mut bounds = Vec::new();
        if in_trait {
            bounds.push(syn::parse_quote!(Self: ::core::marker::Sized));
            let differentiated = method
                .sig
                .receiver()
                .is_some_and(|r| !r.attrs.iter().any(|a| a.path().is_ident("nodiff")));
            if differentiated {
                let rt = rt();
                bounds.push(syn::parse_quote!(Self: #rt::Differentiable));
            }
        }
        TraitMethod {
            captures: syn::parse_quote!(use<#this #(#params),*>),
            path: path.cloned(),
            bounds,
        }
    }

    /// `generics` with [`Self::bounds`] added to their where-clause.
    fn bounded(&self, generics: &syn::Generics) -> syn::Generics {
        let mut generics = generics.clone();
        if !self.bounds.is_empty() {
            let clause = generics.make_where_clause();
            clause.predicates.extend(self.bounds.iter().cloned());
        }
        generics
    }
}

/// Return type `ret` with the trait method's captures added to each `impl Trait` in it.
fn capturing(ret: TokenStream, trait_method: Option<&TraitMethod>) -> TokenStream {
    struct Add<'a>(&'a syn::TypeParamBound);
    impl syn::visit_mut::VisitMut for Add<'_> {
        fn visit_type_impl_trait_mut(&mut self, t: &mut syn::TypeImplTrait) {
            t.bounds.push(self.0.clone());
        }
    }
    let Some(trait_method) = trait_method else {
        return ret;
    };
    let mut ty: syn::Type = syn::parse2(ret).expect("a return type parses");
    syn::visit_mut::VisitMut::visit_type_mut(&mut Add(&trait_method.captures), &mut ty);
    quote!(#ty)
}

/// The lints generated functions allow.
fn lints() -> TokenStream {
    quote!(#[allow(unused, non_camel_case_types, clippy::all, clippy::pedantic, clippy::nursery)])
}

/// The items written for one function.
pub struct Generated {
    /// The hidden entry points (`fwd`, `tangent`, ..).
    pub hidden: TokenStream,
    /// The public entry points (`f_vjp`, `f_grad`, ..).
    pub public: TokenStream,
}

/// `generated` in place beside `func`: in an `impl` block, as its items; beside a free
/// function `f`, the public entry points as functions and the hidden ones as associated
/// functions of a type named `f` (which names live in the type namespace, so `use a::f;`
/// imports it with the function).
pub fn place(func: &ItemFn, host: Host, generated: Vec<Generated>) -> TokenStream {
    let (hidden, public): (Vec<_>, Vec<_>) =
        generated.into_iter().map(|g| (g.hidden, g.public)).unzip();
    match host {
        Host::Impl => quote!(#(#hidden)* #(#public)*),
        Host::Free => {
            let rt = rt();
            let vis = &func.vis;
            let name = &func.sig.ident;
            quote! {
                #[doc(hidden)]
                #[allow(non_camel_case_types, dead_code, missing_docs, missing_debug_implementations)]
                #vis struct #name {}
                impl #rt::DifferentiableFunction for #name {}
                impl #name {
                    #(#hidden)*
                }
                #(#public)*
            }
        }
    }
}
