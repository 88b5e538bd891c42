//! The three attributes: the user's function, unchanged, plus a definition item and checks.

use crate::args::{Attrs, Shape};
use crate::checks::{self, Output};
use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{Expr, FnArg, ItemFn, Lit, LitStr, Meta, ReturnType};

/// Which attribute is expanding.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Tool,
    Prompt,
    Resource,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::Resource => "resource",
        }
    }

    fn known(self) -> &'static [(&'static str, Shape)] {
        match self {
            Kind::Tool => &[
                ("name", Shape::Str),
                ("title", Shape::Str),
                ("description", Shape::Str),
                ("read_only", Shape::Flag),
                ("destructive", Shape::Flag),
                ("idempotent", Shape::Flag),
                ("open_world", Shape::Flag),
                ("scopes", Shape::StrList),
                ("ui", Shape::Str),
                ("visibility", Shape::StrList),
                ("crate", Shape::Path),
            ],
            Kind::Prompt => &[
                ("name", Shape::Str),
                ("title", Shape::Str),
                ("description", Shape::Str),
                ("scopes", Shape::StrList),
                ("crate", Shape::Path),
            ],
            Kind::Resource => &[
                ("uri", Shape::Str),
                ("template", Shape::Str),
                ("name", Shape::Str),
                ("title", Shape::Str),
                ("description", Shape::Str),
                ("mime_type", Shape::Str),
                ("crate", Shape::Path),
            ],
        }
    }

    fn output(self) -> Output {
        match self {
            Kind::Tool => Output {
                trait_name: "ToolReturn",
                via_future: "assert_tool_output",
                json: true,
            },
            Kind::Prompt => Output {
                trait_name: "PromptReturn",
                via_future: "assert_prompt_output",
                json: false,
            },
            Kind::Resource => Output {
                trait_name: "ReadReturn",
                via_future: "assert_read_output",
                json: false,
            },
        }
    }
}

/// Expands one attribute. Never fails: errors are emitted next to the function, which is always
/// emitted unchanged (so one mistake does not cascade into "cannot find function" errors).
pub(crate) fn run(kind: Kind, attr: TokenStream, item: TokenStream) -> TokenStream {
    let out = match syn::parse2::<ItemFn>(item.clone()) {
        Ok(func) => expand(kind, attr, func),
        Err(e) => {
            let message = format!("#[{}] goes on an `async fn`: {e}", kind.noun());
            let mut out = syn::Error::new(e.span(), message).to_compile_error();
            out.extend(item);
            out
        }
    };
    if std::env::var_os("DUOMCP_MACROS_DEBUG").is_some_and(|v| v != "0") {
        eprintln!("#[{}] expands to:\n{out}\n", kind.noun());
    }
    out
}

fn expand(kind: Kind, attr: TokenStream, mut func: ItemFn) -> TokenStream {
    let mut errors = Vec::new();
    let attrs = Attrs::parse(attr, kind.known(), &mut errors);
    check_signature(kind, &func, &mut errors);
    if is_sync(&func) && !matches!(func.sig.output, ReturnType::Default) {
        // Reported once, above; emitted as the `async fn` it should be, so neither the checks
        // below nor the registration add errors of their own for the same mistake. (A plain
        // `fn f()` has no checks to silence; as `async fn f()` a prompt's `()` would add one.)
        func.sig.asyncness = Some(syn::Token![async](func.sig.fn_token.span));
    }
    if func
        .sig
        .inputs
        .iter()
        .any(|i| matches!(i, FnArg::Receiver(_)))
    {
        // A method: the definition item could not stand in an `impl` block; the error says why.
        let errors = errors.into_iter().map(|e| e.to_compile_error());
        return quote! { #func #(#errors)* };
    }

    let krate: syn::Path = attrs
        .path("crate")
        .cloned()
        .unwrap_or_else(|| syn::parse_quote!(::duomcp));
    let ident = &func.sig.ident;
    let name = match attrs.str("name") {
        Some(name) => name.clone(),
        None => LitStr::new(&ident.unraw().to_string(), ident.span()),
    };
    if kind != Kind::Resource {
        check_name(kind, &name, &mut errors);
    }
    let description = attrs
        .str("description")
        .cloned()
        .or_else(|| doc_text(&func).map(|d| LitStr::new(&d, Span::call_site())));

    let spec = match kind {
        Kind::Tool => {
            let mut spec = tool_spec(&krate, &name, &description, &attrs);
            spec.extend(crate::apps::tool_ui(&krate, &attrs, &mut errors));
            wrap_spec(&krate, &name, spec)
        }
        Kind::Prompt => prompt_spec(&krate, &name, &description, &attrs),
        Kind::Resource => resource_spec(&krate, &name, &description, &attrs, &func, &mut errors),
    };
    let checks = checks::emit(&func, &krate, &kind.output());

    let vis = &func.vis;
    let noun = kind.noun();
    let struct_doc = format!(
        "The definition of the {noun} `{}`: `{}::spec()`.",
        name.value(),
        ident
    );
    let errors = errors.into_iter().map(|e| e.to_compile_error());
    quote! {
        #func

        #[doc = #struct_doc]
        #[doc(hidden)]
        #[allow(non_camel_case_types, dead_code)]
        #vis struct #ident {}

        #[allow(dead_code)]
        impl #ident {
            #spec
        }

        #checks
        #(#errors)*
    }
}

/// What the handler API cannot take, said up front at the right place.
fn check_signature(kind: Kind, func: &ItemFn, errors: &mut Vec<syn::Error>) {
    let sig = &func.sig;
    let noun = kind.noun();
    for input in &sig.inputs {
        if let FnArg::Receiver(r) = input {
            errors.push(syn::Error::new_spanned(
                r,
                format!(
                    "a {noun} handler is a free function, not a method: take shared data as \
                     `State<T>` (registered with `ServerBuilder::state`)"
                ),
            ));
        }
    }
    if let Some(extra) = sig.inputs.iter().nth(8) {
        errors.push(syn::Error::new_spanned(
            extra,
            "a handler takes at most 8 arguments; group them in one `Args<T>` struct",
        ));
    }
    if let Some(u) = &sig.unsafety {
        errors.push(syn::Error::new_spanned(u, "a handler cannot be `unsafe`"));
    }
    if let Some(c) = &sig.constness {
        errors.push(syn::Error::new_spanned(c, "a handler cannot be `const`"));
    }
    if is_sync(func) {
        errors.push(syn::Error::new_spanned(
            sig.fn_token,
            format!(
                "a {noun} handler must be an `async fn`: make it `async fn {}`",
                sig.ident
            ),
        ));
    }
}

/// A plain `fn` that does not return a future (`impl Future<…>`, a `BoxFuture`, a
/// `Pin<Box<…>>`): not a handler, and the fix is `async`.
fn is_sync(func: &ItemFn) -> bool {
    if func.sig.asyncness.is_some() {
        return false;
    }
    match &func.sig.output {
        ReturnType::Default => true,
        ReturnType::Type(_, ty) => {
            let text = quote!(#ty).to_string();
            !(text.contains("Future") || text.starts_with("Pin"))
        }
    }
}

/// Tool and prompt names: 1–128 of `A-Z a-z 0-9 _ - .` (SEP-986), the same in both revisions.
fn check_name(kind: Kind, name: &LitStr, errors: &mut Vec<syn::Error>) {
    let value = name.value();
    let ok = (1..=128).contains(&value.len())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !ok {
        errors.push(syn::Error::new(
            name.span(),
            format!(
                "`{value}` is not a valid {} name: use 1 to 128 ASCII letters, digits, `_`, `-` or `.`",
                kind.noun()
            ),
        ));
    }
}

/// The function's doc comment, as rustdoc would read it: `///` lines joined, the one space
/// after `///` removed, blank lines at either end dropped. `None` if there is none.
fn doc_text(func: &ItemFn) -> Option<String> {
    let mut lines = Vec::new();
    for attr in &func.attrs {
        let Meta::NameValue(nv) = &attr.meta else {
            continue;
        };
        if !nv.path.is_ident("doc") {
            continue;
        }
        // `#[doc = include_str!(…)]` and other macros cannot be read here; skip them.
        let Expr::Lit(syn::ExprLit {
            lit: Lit::Str(s), ..
        }) = &nv.value
        else {
            continue;
        };
        // `split`, not `lines`: an empty `///` line is an empty string, and a paragraph break.
        for line in s.value().split('\n') {
            lines.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
        }
    }
    let first = lines.iter().position(|l| !l.is_empty())?;
    let last = lines.iter().rposition(|l| !l.is_empty())?;
    Some(lines[first..=last].join("\n"))
}

fn opt_str(krate: &syn::Path, s: Option<&LitStr>) -> TokenStream {
    match s {
        Some(s) => quote!(#krate::__private::Some(#s)),
        None => quote!(#krate::__private::None),
    }
}

fn tool_spec(
    krate: &syn::Path,
    name: &LitStr,
    description: &Option<LitStr>,
    attrs: &Attrs,
) -> TokenStream {
    let mut body = quote! {
        let spec = #krate::__private::ToolSpec::new(#name);
    };
    if let Some(d) = description {
        body.extend(quote! { let spec = spec.description(#d); });
    }
    if let Some(t) = attrs.str("title") {
        body.extend(quote! { let spec = spec.title(#t); });
    }
    body.extend(scopes(attrs));
    let hints = ["read_only", "destructive", "idempotent", "open_world"];
    if hints.iter().any(|h| attrs.has(h)) {
        let values = hints.iter().map(|h| match attrs.flag(h) {
            Some(b) => quote!(#krate::__private::Some(#b)),
            None => quote!(#krate::__private::None),
        });
        body.extend(quote! {
            let spec = spec.annotations(#krate::__private::annotations(#(#values),*));
        });
    }
    body
}

/// `pub fn spec() -> ToolSpec { <body> spec }`.
fn wrap_spec(krate: &syn::Path, name: &LitStr, body: TokenStream) -> TokenStream {
    let doc = format!("The definition of the tool `{}`.", name.value());
    quote! {
        #[doc = #doc]
        pub fn spec() -> #krate::__private::ToolSpec {
            #body
            spec
        }
    }
}

/// `let spec = spec.scopes([...]);` for `scopes = [...]`.
fn scopes(attrs: &Attrs) -> TokenStream {
    match attrs.str_list("scopes") {
        Some(list) => {
            let n = list.len();
            quote! { let spec = spec.scopes::<[&'static str; #n], &'static str>([#(#list),*]); }
        }
        None => TokenStream::new(),
    }
}

fn prompt_spec(
    krate: &syn::Path,
    name: &LitStr,
    description: &Option<LitStr>,
    attrs: &Attrs,
) -> TokenStream {
    let mut body = quote! {
        let spec = #krate::__private::PromptSpec::new(#name);
    };
    if let Some(d) = description {
        body.extend(quote! { let spec = spec.description(#d); });
    }
    if let Some(t) = attrs.str("title") {
        body.extend(quote! { let spec = spec.title(#t); });
    }
    body.extend(scopes(attrs));
    let doc = format!("The definition of the prompt `{}`.", name.value());
    quote! {
        #[doc = #doc]
        pub fn spec() -> #krate::__private::PromptSpec {
            #body
            spec
        }
    }
}

fn resource_spec(
    krate: &syn::Path,
    name: &LitStr,
    description: &Option<LitStr>,
    attrs: &Attrs,
    func: &ItemFn,
    errors: &mut Vec<syn::Error>,
) -> TokenStream {
    let title = opt_str(krate, attrs.str("title"));
    let description = opt_str(krate, description.as_ref());
    let mime_type = opt_str(krate, attrs.str("mime_type"));
    let (constructor, ty, target) = match (attrs.str("uri"), attrs.str("template")) {
        (Some(uri), None) => (quote!(resource), quote!(Resource), uri.clone()),
        (None, Some(template)) => (
            quote!(resource_template),
            quote!(ResourceTemplate),
            template.clone(),
        ),
        (uri, template) => {
            let (span, message) = match (uri, template) {
                (Some(_), Some(_)) => (
                    attrs.span("template").unwrap_or_else(Span::call_site),
                    "give either `uri` (a fixed resource) or `template` (an RFC 6570 template), not both",
                ),
                _ => (
                    func.sig.ident.span(),
                    "#[resource] needs `uri = \"…\"` (a fixed resource) or `template = \"…\"` (an RFC 6570 URI template)",
                ),
            };
            errors.push(syn::Error::new(span, message));
            // Still define `spec()`, so registrations do not add errors of their own.
            (
                quote!(resource),
                quote!(Resource),
                LitStr::new("", Span::call_site()),
            )
        }
    };
    let doc = format!(
        "The definition of the resource `{}` ({}).",
        name.value(),
        target.value()
    );
    quote_spanned! {Span::call_site()=>
        #[doc = #doc]
        pub fn spec() -> #krate::__private::#ty {
            #krate::__private::#constructor(#target, #name, #title, #description, #mime_type)
        }
    }
}
