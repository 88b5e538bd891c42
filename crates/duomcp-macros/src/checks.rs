//! Hidden checks, `debug_handler` style.
//!
//! Registering a handler needs bounds the user never wrote: every argument an extractor, the
//! return value convertible, the future `Send`. Checked only at `.tool(…)`, a failure would be
//! reported there, against the whole function type. Each bound is therefore restated in a
//! function that is never called, whose tokens carry the span of the user's argument type,
//! return type or name, so the error lands on the offending part of the signature.
//!
//! Bounds are stated as paths (`<bool as HandlerArgument>::check`), not as `where` clauses: a
//! `where` clause without generics is a "trivial bound", and rustc's error then mentions an
//! unstable feature. The traits named are `duomcp::__private` restatements of the real ones
//! (`HandlerArgument` for `FromCallParts`, `ArgsSchema` for `T: JsonSchema` in `Args<T>`, …)
//! whose messages name the rule and the fix, and do not list every implementor (a list that
//! grows with features and would make the pinned `.stderr` files churn).

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{format_ident, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{FnArg, GenericArgument, ItemFn, PathArguments, ReturnType, Type};

/// What a handler's return value must convert into.
pub(crate) struct Output {
    /// `ToolReturn`, `PromptReturn` or `ReadReturn` (restating `IntoToolResult` & co.).
    pub trait_name: &'static str,
    /// The `__private` helper that checks it through a future (for unnameable types).
    pub via_future: &'static str,
    /// Whether `Json<T>` is a valid output (tools only).
    pub json: bool,
}

/// The checks for `func`, wrapped in `const _: () = { … };` so they add no names.
///
/// Generic functions are skipped: their bounds cannot be stated without their parameters, and
/// they are registered with explicit type arguments anyway.
pub(crate) fn emit(func: &ItemFn, krate: &syn::Path, output: &Output) -> TokenStream {
    if !func.sig.generics.params.is_empty() {
        return TokenStream::new();
    }
    let mut body = TokenStream::new();
    let mut params = Vec::new();
    let mut args = Vec::new();

    for (i, input) in func.sig.inputs.iter().enumerate() {
        let FnArg::Typed(pat) = input else {
            // A receiver is rejected with its own error.
            return TokenStream::new();
        };
        let ty = &*pat.ty;
        let arg = format_ident!("arg{}", i);
        params.push(quote_spanned! {ty.span()=> #arg: #ty });
        args.push(arg);
        if has_impl_trait(ty) {
            continue;
        }
        body.extend(match wrapped(ty, "Args") {
            // `Args<T>`: say which of `T`'s derives is missing.
            Some(inner) => [
                bound(krate, inner, "ArgsDeserialize"),
                bound(krate, inner, "ArgsSchema"),
            ]
            .into_iter()
            .collect(),
            None => bound(krate, ty, "HandlerArgument"),
        });
    }

    let name = &func.sig.ident;
    let call = quote_spanned! {name.span()=> #name(#(#args),*) };

    // The future must be `Send` (and a future at all, if the fn is not `async`; a plain
    // `fn f()` is reported with its own error).
    if func.sig.asyncness.is_some() || !matches!(func.sig.output, ReturnType::Default) {
        let send = respan(krate.to_token_stream(), name.span());
        body.extend(quote_spanned! {name.span()=>
            #send::__private::handler_future_must_be_send(#call);
        });
    }

    // The return value must convert into a result.
    match (&func.sig.asyncness, &func.sig.output) {
        // `async fn f()` returns `()`, which only a tool may: point at the name.
        (Some(_), ReturnType::Default) => {
            let unit = quote_spanned! {name.span()=> () };
            body.extend(bound(krate, &unit, output.trait_name));
        }
        (Some(_), ReturnType::Type(_, ty)) if !has_impl_trait(ty) => {
            body.extend(output_checks(krate, ty, output));
        }
        (_, ReturnType::Type(_, ty)) => {
            let via = format_ident!("{}", output.via_future, span = ty.span());
            let path = respan(krate.to_token_stream(), ty.span());
            body.extend(quote_spanned! {ty.span()=>
                #path::__private::#via(#call);
            });
        }
        // Not a handler at all; reported with its own error.
        (None, ReturnType::Default) => {}
    }

    quote_spanned! {Span::call_site()=>
        const _: () = {
            #[allow(dead_code, unused_variables, unused_must_use, clippy::let_underscore_future)]
            fn __duomcp_check(#(#params),*) {
                #body
            }
        };
    }
}

/// `let _ = <ty as krate::__private::Trait>::check;`, every token at `ty`'s span, so the error
/// for an unmet bound lands exactly there.
fn bound(krate: &syn::Path, ty: &dyn ToTokens, trait_name: &str) -> TokenStream {
    let ty = ty.to_token_stream();
    let span = ty
        .clone()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span());
    let krate = respan(krate.to_token_stream(), span);
    let trait_ident = format_ident!("{}", trait_name, span = span);
    let check = format_ident!("check", span = span);
    quote_spanned! {span=>
        let _ = <#ty as #krate::__private::#trait_ident>::#check;
    }
}

/// `tokens` with every span set to `span`: a path whose tokens come from two places gets the
/// span of the macro call, not of the user's type.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            if let TokenTree::Group(g) = &t {
                let mut group = Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                t = TokenTree::Group(group);
            } else {
                t.set_span(span);
            }
            t
        })
        .collect()
}

/// `T` in `Wrapper<T>` (by the last path segment's name: good enough for diagnostics).
fn wrapped<'a>(ty: &'a Type, wrapper: &str) -> Option<&'a Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != wrapper {
        return None;
    }
    let PathArguments::AngleBracketed(a) = &last.arguments else {
        return None;
    };
    match a.args.first()? {
        GenericArgument::Type(t) if a.args.len() == 1 => Some(t),
        _ => None,
    }
}

/// Checks of a return type: a `Result<T, E>` is checked part by part (`T` converts, `E` is an
/// error), a tool's `Json<T>` by `T`'s derives, anything else as a whole.
fn output_checks(krate: &syn::Path, ty: &Type, output: &Output) -> TokenStream {
    if let Some((ok, err)) = result_parts(ty) {
        let mut checks = output_checks(krate, ok, output);
        checks.extend(bound(krate, err, "ErrorType"));
        return checks;
    }
    match wrapped(ty, "Json") {
        Some(inner) if output.json => [
            bound(krate, inner, "JsonSerialize"),
            bound(krate, inner, "JsonOutputSchema"),
        ]
        .into_iter()
        .collect(),
        _ => bound(krate, ty, output.trait_name),
    }
}

/// `T` and `E` of a `Result<T, E>` (aliases with one parameter are checked whole).
fn result_parts(ty: &Type) -> Option<(&Type, &Type)> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let PathArguments::AngleBracketed(a) = &last.arguments else {
        return None;
    };
    let mut types = a.args.iter().filter_map(|g| match g {
        GenericArgument::Type(t) => Some(t),
        _ => None,
    });
    match (types.next(), types.next(), types.next()) {
        (Some(ok), Some(err), None) => Some((ok, err)),
        _ => None,
    }
}

fn has_impl_trait(ty: &Type) -> bool {
    ty.to_token_stream().into_iter().any(|t| contains_impl(&t))
}

fn contains_impl(t: &TokenTree) -> bool {
    match t {
        TokenTree::Ident(i) => i == "impl",
        TokenTree::Group(g) => g.stream().into_iter().any(|t| contains_impl(&t)),
        _ => false,
    }
}
