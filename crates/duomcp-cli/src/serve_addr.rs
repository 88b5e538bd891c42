//! The address of `duomcp serve --http HOST:PORT`: read with errors that say what to type, and
//! bound with errors that name the address.

use tokio::net::TcpListener;

/// Why `text` is not a `HOST:PORT`, in words that say what to type instead.
pub fn check(text: &str) -> Result<(), String> {
    if let Some(rest) = text
        .strip_prefix("http://")
        .or_else(|| text.strip_prefix("https://"))
    {
        let authority = rest.split('/').next().unwrap_or(rest);
        return Err(format!(
            "--http takes HOST:PORT, not a URL: try `--http {authority}` (the endpoint is then http://{authority}/mcp)"
        ));
    }
    let port = match text.rfind(']') {
        // `[::1]:3000`
        Some(close) => text[close + 1..].strip_prefix(':'),
        None => text.rsplit_once(':').map(|(_, port)| port),
    };
    match port {
        None => Err(format!(
            "--http takes HOST:PORT and `{text}` has no port: e.g. `--http {text}:3000` (port 0 picks a free one)"
        )),
        Some(p) if p.parse::<u16>().is_err() => Err(format!(
            "--http takes HOST:PORT and `{p}` in `{text}` is not a port number (0-65535)"
        )),
        Some(_) => Ok(()),
    }
}

/// Binds `addr` (`HOST:PORT`), naming it in any error.
pub async fn bind(addr: &str) -> Result<TcpListener, String> {
    check(addr)?;
    TcpListener::bind(addr).await.map_err(|e| {
        use std::io::ErrorKind::*;
        match e.kind() {
            AddrInUse => format!(
                "cannot listen on {addr}: the address is already in use (is another server running there? pick another port, or port 0 for a free one)"
            ),
            PermissionDenied => format!(
                "cannot listen on {addr}: permission denied (ports below 1024 need privileges)"
            ),
            AddrNotAvailable => format!(
                "cannot listen on {addr}: no interface of this machine has that address"
            ),
            _ if e.to_string().contains("lookup") => {
                format!("cannot listen on {addr}: the host name does not resolve ({e})")
            }
            _ => format!("cannot listen on {addr}: {e}"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn addresses_without_a_port_or_with_a_scheme_are_explained() {
        assert!(check("127.0.0.1:3000").is_ok());
        assert!(check("[::1]:0").is_ok());
        let e = check("localhost").unwrap_err();
        assert!(
            e.contains("HOST:PORT") && e.contains("localhost:3000"),
            "{e}"
        );
        let e = check("http://127.0.0.1:3000/mcp").unwrap_err();
        assert!(e.contains("`--http 127.0.0.1:3000`"), "{e}");
        assert!(check("localhost:http").unwrap_err().contains("not a port"));
        assert!(check("[::1]").unwrap_err().contains("has no port"));
    }
}
