//! `#[derive(Differentiable)]`: a parameter struct whose leaves are its fields' leaves, in
//! declaration order, with `#[nodiff]` fields carried along as constants.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::quote;
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Data, DeriveInput, Field, Fields, GenericArgument, Member, PathArguments, Type};

const SUPPORTED: &str = "#[derive(Differentiable)] supports structs (with named or tuple fields) \
whose fields are tensors, other Differentiable types, or `Vec`s and arrays of them";

/// One field, differentiated or constant.
struct FieldModel<'a> {
    member: Member,
    ty: &'a Type,
    nodiff: bool,
    /// `#[buffer]`: a constant tensor saved with the model (implies `nodiff`).
    buffer: bool,
}

/// Where the impl's `Elem` comes from.
enum ElemSource<'a> {
    /// The `T` written in a field's `Tensor<T>` (possibly inside `Vec`s and arrays).
    Written(&'a Type),
    /// `<F as Differentiable>::Elem` of the field at this index, when no field's type shows it.
    Field(usize),
}

/// Expands `#[derive(Differentiable)]` on `input`.
pub fn differentiable(input: DeriveInput) -> syn::Result<TokenStream> {
    let fields = match &input.data {
        Data::Struct(data) => &data.fields,
        Data::Enum(data) => {
            return Err(syn::Error::new_spanned(
                data.enum_token,
                format!("{SUPPORTED}; an enum's leaves would depend on its variant"),
            ))
        }
        Data::Union(data) => {
            return Err(syn::Error::new_spanned(
                data.union_token,
                format!("{SUPPORTED}; a union's fields overlap"),
            ))
        }
    };
    let fields = field_models(fields)?;
    let Some(first) = fields.iter().position(|f| !f.nodiff) else {
        return Err(syn::Error::new_spanned(
            &input.ident,
            format!(
                "{SUPPORTED}; `{}` has no differentiable field (every field is #[nodiff] or \
                 there are none)",
                input.ident
            ),
        ));
    };
    // Naming the element type as written keeps `Elem` free of the field types, which may be
    // less visible than the struct (a private type in a public impl's associated type is an
    // error).
    let elem = fields
        .iter()
        .filter(|f| !f.nodiff)
        .find_map(|f| written_elem(f.ty))
        .map_or(ElemSource::Field(first), ElemSource::Written);
    let mut out = emit(&input, &fields, &elem);
    if let ElemSource::Written(ty) = elem {
        out.extend(dual_impls(&input, &fields, ty));
    }
    Ok(out)
}

/// For a struct generic over its element type (`Mlp<T>` with `Tensor<T>` fields): how `f_hvp`
/// seeds it with a direction as `Mlp<Dual<T>>` (`DualSeed`) and splits a gradient on dual
/// numbers back into two `Mlp<T>` (`DualParts`). Each differentiated field is seeded and split
/// by its own impls (a field they do not cover leaves the struct without them); a constant
/// field that names `T` is lifted to dual numbers with zero tangents and split back to its
/// primal, any other is cloned. The struct as a constant on dual numbers (`Lift`: zero
/// tangents everywhere) is what `f_hvp` passes for a `#[nodiff]` parameter of its type.
fn dual_impls(input: &DeriveInput, fields: &[FieldModel<'_>], elem: &Type) -> TokenStream {
    let Some(t) = input
        .generics
        .type_params()
        .map(|p| &p.ident)
        .find(|i| matches!(elem, Type::Path(p) if p.qself.is_none() && p.path.is_ident(*i)))
    else {
        return TokenStream::new();
    };
    let rt = quote!(::rune_ad::__private);
    let dual: Type = syn::parse_quote!(#rt::Dual<#t>);
    let on_duals = |ty: &Type| -> Type {
        struct Swap<'a>(&'a syn::Ident, &'a Type);
        impl syn::visit_mut::VisitMut for Swap<'_> {
            fn visit_type_mut(&mut self, ty: &mut Type) {
                if matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.is_ident(self.0)) {
                    *ty = self.1.clone();
                    return;
                }
                syn::visit_mut::visit_type_mut(self, ty);
            }
        }
        let mut ty = ty.clone();
        syn::visit_mut::VisitMut::visit_type_mut(&mut Swap(t, &dual), &mut ty);
        ty
    };
    let names_t = |ty: &Type| {
        quote!(#ty)
            .into_iter()
            .any(|tt| matches!(tt, TokenTree::Ident(ref i) if i == t) || names_group(&tt, t))
    };
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let dual_args = input.generics.params.iter().map(|p| match p {
        syn::GenericParam::Type(tp) if tp.ident == *t => quote!(#dual),
        syn::GenericParam::Type(tp) => {
            let i = &tp.ident;
            quote!(#i)
        }
        syn::GenericParam::Lifetime(l) => {
            let l = &l.lifetime;
            quote!(#l)
        }
        syn::GenericParam::Const(c) => {
            let i = &c.ident;
            quote!(#i)
        }
    });
    let dual_self = quote!(#name<#(#dual_args),*>);
    let existing = where_clause.map(|w| &w.predicates);
    let separator = existing
        .filter(|p| !p.empty_or_trailing())
        .map(|_| quote!(,));
    let mut seed_bounds = Vec::new();
    let mut parts_bounds = Vec::new();
    let mut lift_bounds = Vec::new();
    let mut lifts = Vec::new();
    let mut seeds = Vec::new();
    let (mut primals, mut tangents) = (Vec::new(), Vec::new());
    for f in fields {
        let (member, ty) = (&f.member, f.ty);
        let dual_ty = on_duals(ty);
        if names_t(ty) {
            lift_bounds.push(quote!(#ty: #rt::Lift<Lifted = #dual_ty>));
            lifts.push(quote!(#member: #rt::Lift::lift(&self.#member)));
        } else {
            lift_bounds.push(quote!(#ty: ::core::clone::Clone));
            lifts.push(quote!(#member: ::core::clone::Clone::clone(&self.#member)));
        }
        if f.nodiff {
            if names_t(ty) {
                seed_bounds.push(quote!(#ty: #rt::Lift<Lifted = #dual_ty>));
                parts_bounds.push(quote!(#dual_ty: #rt::DualParts<Real = #ty>));
                seeds.push(quote!(#member: #rt::Lift::lift(&self.#member)));
                primals.push(quote!(#member: #rt::DualParts::primal(&self.#member)));
                tangents.push(quote!(#member: #rt::DualParts::primal(&self.#member)));
            } else {
                seed_bounds.push(quote!(#ty: ::core::clone::Clone));
                parts_bounds.push(quote!(#ty: ::core::clone::Clone));
                seeds.push(quote!(#member: ::core::clone::Clone::clone(&self.#member)));
                primals.push(quote!(#member: ::core::clone::Clone::clone(&self.#member)));
                tangents.push(quote!(#member: ::core::clone::Clone::clone(&self.#member)));
            }
        } else {
            seed_bounds.push(quote!(#ty: #rt::DualSeed<Direction = #ty, Dual = #dual_ty>));
            parts_bounds.push(quote!(#dual_ty: #rt::DualParts<Real = #ty>));
            seeds.push(quote!(#member: #rt::DualSeed::seed(&self.#member, &direction.#member)));
            primals.push(quote!(#member: #rt::DualParts::primal(&self.#member)));
            tangents.push(quote!(#member: #rt::DualParts::tangent(&self.#member)));
        }
    }
    quote! {
        #[automatically_derived]
        impl #impl_generics #rt::DualSeed for #name #ty_generics
        where
            #existing #separator
            #t: #rt::Element,
            #(#seed_bounds,)*
        {
            type Direction = Self;
            type Dual = #dual_self;
            fn seed(&self, direction: &Self) -> #dual_self {
                #name { #(#seeds,)* }
            }
        }

        #[automatically_derived]
        impl #impl_generics #rt::Lift for #name #ty_generics
        where
            #existing #separator
            #t: #rt::Element,
            #(#lift_bounds,)*
        {
            type Lifted = #dual_self;
            fn lift(&self) -> #dual_self {
                #name { #(#lifts,)* }
            }
        }

        #[automatically_derived]
        impl #impl_generics #rt::DualParts for #dual_self
        where
            #existing #separator
            #t: #rt::Element,
            #(#parts_bounds,)*
        {
            type Real = #name #ty_generics;
            fn primal(&self) -> #name #ty_generics {
                #name { #(#primals,)* }
            }
            fn tangent(&self) -> #name #ty_generics {
                #name { #(#tangents,)* }
            }
        }
    }
}

/// Whether a group token (`<..>`, `(..)`) holds the identifier `t`.
fn names_group(tt: &TokenTree, t: &syn::Ident) -> bool {
    match tt {
        TokenTree::Group(g) => g
            .stream()
            .into_iter()
            .any(|tt| matches!(tt, TokenTree::Ident(ref i) if i == t) || names_group(&tt, t)),
        _ => false,
    }
}

/// `T` when `ty` is `Tensor<T>`, `Vec<..>` or `[..; N]` of one.
fn written_elem(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Array(array) => written_elem(&array.elem),
        Type::Group(group) => written_elem(&group.elem),
        Type::Paren(paren) => written_elem(&paren.elem),
        Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last()?;
            let PathArguments::AngleBracketed(args) = &last.arguments else {
                return None;
            };
            let mut types = args.args.iter().filter_map(|arg| match arg {
                GenericArgument::Type(ty) => Some(ty),
                _ => None,
            });
            let (Some(inner), None) = (types.next(), types.next()) else {
                return None;
            };
            if last.ident == "Tensor" {
                Some(inner)
            } else if last.ident == "Vec" {
                written_elem(inner)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Reads each field's `#[nodiff]`, reporting every malformed one.
fn field_models(fields: &Fields) -> syn::Result<Vec<FieldModel<'_>>> {
    let mut errors: Option<syn::Error> = None;
    let mut models = Vec::with_capacity(fields.len());
    for (index, field) in fields.iter().enumerate() {
        let buffer = field.attrs.iter().any(|a| a.path().is_ident("buffer"));
        let nodiff = match is_nodiff(field) {
            Ok(nodiff) => nodiff || buffer,
            Err(error) => {
                match &mut errors {
                    Some(all) => all.combine(error),
                    None => errors = Some(error),
                }
                false
            }
        };
        let member = match &field.ident {
            Some(ident) => Member::Named(ident.clone()),
            None => Member::Unnamed(syn::Index {
                index: index as u32,
                span: field.ty.span(),
            }),
        };
        models.push(FieldModel {
            member,
            ty: &field.ty,
            nodiff,
            buffer,
        });
    }
    match errors {
        Some(errors) => Err(errors),
        None => Ok(models),
    }
}

fn is_nodiff(field: &Field) -> syn::Result<bool> {
    let mut nodiff = false;
    for attr in field.attrs.iter().filter(|a| a.path().is_ident("nodiff")) {
        attr.meta.require_path_only().map_err(|_| {
            syn::Error::new_spanned(
                attr,
                "#[nodiff] takes no arguments: it marks the field as a constant",
            )
        })?;
        nodiff = true;
    }
    Ok(nodiff)
}

/// The impl.
fn emit(input: &DeriveInput, fields: &[FieldModel<'_>], elem: &ElemSource<'_>) -> TokenStream {
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let trait_path = quote!(::rune_ad::__private::Differentiable);
    let field_trait = quote!(::rune_ad::__private::DifferentiableField<Self::Elem>);

    let (elem_type, elem_span) = match *elem {
        ElemSource::Written(ty) => (quote!(#ty), ty.span()),
        ElemSource::Field(index) => {
            let ty = fields[index].ty;
            (quote!(<#ty as #trait_path>::Elem), ty.span())
        }
    };
    let elem_item = respanned(quote!(type Elem = #elem_type;), elem_span);
    let elem_bound = match elem {
        ElemSource::Written(ty) => Some(respanned(
            quote!(#ty: ::rune_ad::__private::Element,),
            elem_span,
        )),
        ElemSource::Field(_) => None,
    };
    // A bound per field, every token respanned to the field's type: a bound that fails on a
    // concrete type is then reported there, once, and the body is checked as if it held.
    let bounds = fields.iter().enumerate().map(|(index, f)| {
        let ty = f.ty;
        let bound = if f.nodiff {
            quote!(#ty: ::core::clone::Clone)
        } else if matches!(*elem, ElemSource::Field(source) if source == index) {
            quote!(#ty: #trait_path)
        } else {
            quote!(#ty: ::rune_ad::__private::DifferentiableField<#elem_type>)
        };
        respanned(bound, ty.span())
    });
    let self_clone = respanned(quote!(Self: ::core::clone::Clone), name.span());
    let existing = where_clause.map(|w| &w.predicates);
    let separator = existing
        .filter(|p| !p.empty_or_trailing())
        .map(|_| quote!(,));

    let zeros = fields.iter().map(|f| {
        let member = &f.member;
        if f.nodiff {
            quote!(#member: ::core::clone::Clone::clone(&self.#member))
        } else {
            let ty = f.ty;
            quote!(#member: <#ty as #field_trait>::zeros_like(&self.#member))
        }
    });
    // A tangent holds zeros for constant tensors too: they do not move. Each differentiated
    // field's tangent comes from `method` (`zero_tangent`, or `as_tangent` of a given tangent).
    let tangent_fields = |method: proc_macro2::TokenStream| -> Vec<proc_macro2::TokenStream> {
        fields
            .iter()
            .map(|f| {
                let member = &f.member;
                if f.nodiff {
                    quote! {
                        #member: {
                            use ::rune_ad::__private::{
                                ZeroTangentOfConstant as _, ZeroTangentOfTensor as _,
                            };
                            (&&self.#member).__rune_zero_tangent()
                        }
                    }
                } else {
                    let ty = f.ty;
                    quote!(#member: <#ty as #field_trait>::#method(&self.#member))
                }
            })
            .collect()
    };
    let zero_tangents = tangent_fields(quote!(zero_tangent));
    let as_tangents = tangent_fields(quote!(as_tangent));
    let active: Vec<_> = fields.iter().filter(|f| !f.nodiff).collect();
    let leaves = active.iter().map(|f| {
        let (member, ty) = (&f.member, f.ty);
        quote!(__rune_leaves.extend(<#ty as #field_trait>::leaves(&self.#member));)
    });
    let leaves_mut = active.iter().map(|f| {
        let (member, ty) = (&f.member, f.ty);
        quote!(__rune_leaves.extend(<#ty as #field_trait>::leaves_mut(&mut self.#member));)
    });
    let paths = active.iter().map(|f| {
        let (member, ty) = (&f.member, f.ty);
        let label = member_label(member);
        quote! {
            __rune_paths.extend(<#ty as #field_trait>::leaf_paths(
                &self.#member,
                &::std::format!("{}{}{}", __rune_prefix, __rune_dot, #label),
            ));
        }
    });

    // The buffers: each `#[buffer]` field (a `Tensor<Self::Elem>`), and the differentiated
    // fields' own, in declaration order.
    let buffers = |method: TokenStream, reference: TokenStream| -> Vec<TokenStream> {
        fields
            .iter()
            .filter(|f| f.buffer || !f.nodiff)
            .map(|f| {
                let (member, ty) = (&f.member, f.ty);
                let label = member_label(member);
                let path = quote!(::std::format!("{}{}{}", __rune_prefix, __rune_dot, #label));
                if f.buffer {
                    // Spanned at the field's type: a buffer of another type is an error there.
                    let value = respanned(quote!(#reference self.#member), ty.span());
                    quote!(__rune_buffers.push((#path, #value));)
                } else {
                    quote! {
                        __rune_buffers.extend(<#ty as #field_trait>::#method(
                            #reference self.#member,
                            &#path,
                        ));
                    }
                }
            })
            .collect()
    };
    let buffer_items = (fields.iter().any(|f| f.buffer) || !active.is_empty()).then(|| {
        let shared = buffers(quote!(buffers), quote!(&));
        let unique = buffers(quote!(buffers_mut), quote!(&mut));
        quote! {
            fn buffers(
                &self,
                __rune_prefix: &::core::primitive::str,
            ) -> ::std::vec::Vec<(
                ::std::string::String,
                &::rune_ad::__private::Tensor<Self::Elem>,
            )> {
                let __rune_dot = if __rune_prefix.is_empty() { "" } else { "." };
                let mut __rune_buffers = ::std::vec::Vec::new();
                #(#shared)*
                __rune_buffers
            }

            fn buffers_mut(
                &mut self,
                __rune_prefix: &::core::primitive::str,
            ) -> ::std::vec::Vec<(
                ::std::string::String,
                &mut ::rune_ad::__private::Tensor<Self::Elem>,
            )> {
                let __rune_dot = if __rune_prefix.is_empty() { "" } else { "." };
                let mut __rune_buffers = ::std::vec::Vec::new();
                #(#unique)*
                __rune_buffers
            }
        }
    });

    quote! {
        #[automatically_derived]
        impl #impl_generics #trait_path for #name #ty_generics
        where
            #existing #separator
            #self_clone,
            #elem_bound
            #(#bounds,)*
        {
            #elem_item

            fn zeros_like(&self) -> Self {
                Self { #(#zeros,)* }
            }

            fn zero_tangent(&self) -> Self {
                Self { #(#zero_tangents,)* }
            }

            fn as_tangent(&self) -> Self {
                Self { #(#as_tangents,)* }
            }

            fn leaves(&self) -> ::std::vec::Vec<&::rune_ad::__private::Tensor<Self::Elem>> {
                let mut __rune_leaves = ::std::vec::Vec::new();
                #(#leaves)*
                __rune_leaves
            }

            fn leaves_mut(
                &mut self,
            ) -> ::std::vec::Vec<&mut ::rune_ad::__private::Tensor<Self::Elem>> {
                let mut __rune_leaves = ::std::vec::Vec::new();
                #(#leaves_mut)*
                __rune_leaves
            }

            fn leaf_paths(
                &self,
                __rune_prefix: &::core::primitive::str,
            ) -> ::std::vec::Vec<::std::string::String> {
                let __rune_dot = if __rune_prefix.is_empty() { "" } else { "." };
                let mut __rune_paths = ::std::vec::Vec::new();
                #(#paths)*
                __rune_paths
            }

            #buffer_items
        }
    }
}

/// The field's name in a leaf path: `w` for a named field, `0` for a tuple field.
fn member_label(member: &Member) -> String {
    match member {
        Member::Named(ident) => ident.unraw().to_string(),
        Member::Unnamed(index) => index.index.to_string(),
    }
}

/// `tokens` with every span, inside groups too, set to `span`.
fn respanned(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let TokenTree::Group(group) = &tree {
                let inner = respanned(group.stream(), span);
                tree = TokenTree::Group(Group::new(group.delimiter(), inner));
            }
            tree.set_span(span);
            tree
        })
        .collect()
}
