//! `#[tool(ui = "ui://…", visibility = ["app"])]`: the MCP Apps keys of the tool attribute.

use crate::args::Attrs;
use proc_macro2::TokenStream;
use quote::quote;

/// `let spec = spec.ui(…).visibility([…]);` for the keys given; a visibility other than
/// `"model"` or `"app"`, or a `ui` that is not a `ui://` URI, is an error at its literal.
pub(crate) fn tool_ui(
    krate: &syn::Path,
    attrs: &Attrs,
    errors: &mut Vec<syn::Error>,
) -> TokenStream {
    let mut body = TokenStream::new();
    if let Some(uri) = attrs.str("ui") {
        if !uri.value().starts_with("ui://") {
            errors.push(syn::Error::new(
                uri.span(),
                format!("`ui` names a view: a `ui://` URI, not `{}`", uri.value()),
            ));
        }
        body.extend(quote! { let spec = spec.ui(#uri); });
    }
    if let Some(list) = attrs.str_list("visibility") {
        let mut who = Vec::new();
        for item in list {
            match item.value().as_str() {
                "model" => who.push(quote!(#krate::__private::UiVisibility::Model)),
                "app" => who.push(quote!(#krate::__private::UiVisibility::App)),
                other => errors.push(syn::Error::new(
                    item.span(),
                    format!("unknown visibility `{other}`; expected \"model\" or \"app\""),
                )),
            }
        }
        body.extend(quote! { let spec = spec.visibility([#(#who),*]); });
    }
    body
}
