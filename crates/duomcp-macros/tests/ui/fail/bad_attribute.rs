//! Every mistake is reported, each at its place, all at once.

#[duomcp::tool(name = "add numbers", color = "red", read_only = "yes", title = "A", title = "B")]
async fn add() -> String {
    String::new()
}

#[duomcp::resource(mime_type = "text/plain")]
async fn nowhere() -> String {
    String::new()
}

#[duomcp::prompt]
fn not_async() {}

struct Calc;

impl Calc {
    #[duomcp::tool]
    async fn method(&self) -> String {
        String::new()
    }
}

fn main() {
    let _ = Calc.method();
}
