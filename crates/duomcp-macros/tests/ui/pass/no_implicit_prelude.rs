//! Generated code names only `::duomcp::__private` (or the `crate = …` path): it compiles with
//! no prelude at all, and with duomcp renamed. (serde's and schemars' derives are not hygienic
//! in this way, so the argument types here come from std.)
#![no_implicit_prelude]

extern crate duomcp as mcp;

mod tools {
    use ::duomcp::server::{Args, Context, HandlerError, Json};
    use ::std::collections::BTreeMap;
    use ::std::convert::From;
    use ::std::string::String;

    /// Sums the values.
    #[::duomcp::tool(title = "Adder", read_only, scopes = ["math"])]
    pub async fn sum(_ctx: Context, Args(values): Args<BTreeMap<String, i64>>) -> Json<BTreeMap<String, i64>> {
        let mut out = BTreeMap::new();
        out.insert(String::from("total"), ::std::iter::Iterator::sum(values.values()));
        Json(out)
    }

    /// Counts the values, through a renamed crate.
    #[::mcp::tool(crate = ::mcp, name = "count")]
    pub async fn count_values(
        Args(values): Args<BTreeMap<String, i64>>,
    ) -> ::std::result::Result<String, HandlerError> {
        ::std::result::Result::Ok(::std::string::ToString::to_string(&values.len()))
    }

    /// A prompt.
    #[::duomcp::prompt(crate = ::duomcp)]
    pub async fn hello() -> String {
        String::from("Say hello.")
    }

    /// A resource.
    #[::duomcp::resource(uri = "mem://a", mime_type = "text/plain")]
    pub async fn a() -> String {
        String::from("a")
    }

    /// A resource template.
    #[::duomcp::resource(template = "mem://{id}")]
    pub async fn by_id(Args(vars): Args<BTreeMap<String, String>>) -> String {
        ::std::format!("{vars:?}")
    }
}

fn main() {
    let _server = ::duomcp::server::Server::builder()
        .tool(tools::sum::spec(), tools::sum)
        .tool(tools::count_values::spec(), tools::count_values)
        .prompt(tools::hello::spec(), tools::hello)
        .resource(tools::a::spec(), tools::a)
        .resource_template(tools::by_id::spec(), tools::by_id)
        .build();
}
