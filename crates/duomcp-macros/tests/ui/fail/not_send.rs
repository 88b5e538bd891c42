use std::rc::Rc;

async fn pause() {}

/// Holds an `Rc` across an `.await`.
#[duomcp::tool]
async fn count() -> String {
    let shared = Rc::new(1);
    pause().await;
    shared.to_string()
}

fn main() {}
