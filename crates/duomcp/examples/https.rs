//! Streamable HTTP over TLS, HTTP/2 or HTTP/1.1 as the client's ALPN picks (the book's "TLS and
//! HTTP/2" chapter includes this file). `https ADDR CERT.pem KEY.pem`.
//!
//! ```sh
//! openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost -keyout target/https-key.pem -out target/https-cert.pem 2>/dev/null
//! cargo run -q -p duomcp --features tls,http2 --example https -- 127.0.0.1:3453 target/https-cert.pem target/https-key.pem &
//! curl -sk --http2 -o /dev/null -w '%{http_version}\n' https://localhost:3453/mcp -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' -H 'mcp-method: server/discover' -d '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
//! ```
//!
//! ```text
//! 2
//! ```

use duomcp::server::Server;
use duomcp::transport::http::{tls, HttpConfig, StreamableHttp};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [addr, cert, key] = args.as_slice() else {
        eprintln!("usage: https ADDR CERT.pem KEY.pem");
        std::process::exit(2);
    };
    // ANCHOR: serve
    let server = Server::builder()
        .name("https-example")
        .tool("hello", || async { "Hello over TLS" })
        .build();
    // TLS 1.2/1.3 (rustls, ring), ALPN `h2` then `http/1.1`.
    let tls = tls::server_config_from_pem_files(cert.as_ref(), key.as_ref())?;
    // Reached as https://localhost:PORT: accept that Host as well as the bound address.
    let config = HttpConfig::default().allow_host("localhost");
    let listener = tokio::net::TcpListener::bind(addr.as_str()).await?;
    eprintln!("https: listening on https://{}/mcp", listener.local_addr()?);
    StreamableHttp::with_config(server, config)
        .serve_tls(listener, tls)
        .await?;
    // ANCHOR_END: serve
    Ok(())
}
