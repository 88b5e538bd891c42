//! How the user-agent part of the authorization code flow happens: [`RedirectHandler`].

use crate::auth::http as ahttp;
use crate::client::auth::{AuthError, AuthFuture};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What came back to the redirect URI: the query parameters of the authorization response.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizationResponse {
    /// The authorization code.
    pub code: Option<String>,
    /// The `state` echoed by the authorization server.
    pub state: Option<String>,
    /// RFC 9207: the issuer that answered.
    pub iss: Option<String>,
    /// An error code instead of a code.
    pub error: Option<String>,
    /// A description of the error.
    pub error_description: Option<String>,
    /// Set when a parameter appeared more than once (the response is then refused).
    pub repeated: bool,
}

impl AuthorizationResponse {
    /// Reads the response from a redirect URL's query.
    ///
    /// ```
    /// use duomcp::auth::AuthorizationResponse;
    /// let r = AuthorizationResponse::from_url("http://127.0.0.1:33418/callback?code=abc&state=xyz").unwrap();
    /// assert_eq!(r.code.as_deref(), Some("abc"));
    /// assert_eq!(r.state.as_deref(), Some("xyz"));
    /// ```
    pub fn from_url(url: &str) -> Result<Self, AuthError> {
        let parsed = url::Url::parse(url)
            .map_err(|e| AuthError::Failed(format!("the redirect `{url}` is not a URL: {e}")))?;
        Ok(Self::from_query(parsed.query().unwrap_or("")))
    }

    /// Reads the response from a query string (`code=…&state=…`).
    pub fn from_query(query: &str) -> Self {
        let mut r = AuthorizationResponse::default();
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            let slot = match k.as_ref() {
                "code" => &mut r.code,
                "state" => &mut r.state,
                "iss" => &mut r.iss,
                "error" => &mut r.error,
                "error_description" => &mut r.error_description,
                _ => continue,
            };
            if slot.is_some() {
                r.repeated = true;
            }
            *slot = Some(v.into_owned());
        }
        r
    }
}

/// Takes the user through the authorization endpoint and brings back the response sent to
/// the redirect URI.
///
/// * [`LoopbackRedirect`] opens the system browser and listens on `127.0.0.1` (command-line
///   tools and desktop apps, RFC 8252);
/// * [`HeadlessRedirect`] requests the authorization URL itself and reads the redirect it gets
///   back: for authorization servers that approve without a user (tests, conformance).
pub trait RedirectHandler: Send + Sync + 'static {
    /// The redirect URI to register and send (`localhost` or HTTPS).
    fn redirect_uri(&self) -> String;

    /// Sends the user to `authorization_url` and returns what reaches the redirect URI.
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> AuthFuture<'a, Result<AuthorizationResponse, AuthError>>;
}

/// Fetches the authorization URL without following redirects and reads the response from the
/// `Location` it answers with. Only for authorization servers that approve at once.
///
/// ```
/// let r = duomcp::auth::HeadlessRedirect::new("http://localhost:3000/callback");
/// use duomcp::auth::RedirectHandler;
/// assert_eq!(r.redirect_uri(), "http://localhost:3000/callback");
/// ```
#[derive(Debug, Clone)]
pub struct HeadlessRedirect {
    redirect_uri: String,
}

impl HeadlessRedirect {
    /// A handler announcing `redirect_uri` (nothing listens there).
    pub fn new(redirect_uri: impl Into<String>) -> Self {
        HeadlessRedirect {
            redirect_uri: redirect_uri.into(),
        }
    }
}

impl RedirectHandler for HeadlessRedirect {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> AuthFuture<'a, Result<AuthorizationResponse, AuthError>> {
        Box::pin(async move {
            let http = ahttp::client(Duration::from_secs(30)).map_err(AuthError::Failed)?;
            let answer = ahttp::send(http.get(authorization_url))
                .await
                .map_err(|e| AuthError::Failed(format!("authorization request: {e}")))?;
            if !answer.status.is_redirection() {
                return Err(AuthError::Failed(format!(
                    "the authorization endpoint answered {} instead of redirecting",
                    answer.status
                )));
            }
            let location = answer
                .headers
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| AuthError::Failed("the redirect has no Location".into()))?;
            let target = url::Url::parse(authorization_url)
                .and_then(|base| base.join(location))
                .map_err(|e| AuthError::Failed(format!("bad Location `{location}`: {e}")))?;
            // The redirect must go to our redirect URI, nowhere else.
            let expected = self.redirect_uri.split('?').next().unwrap_or("");
            let got = target.as_str().split('?').next().unwrap_or("");
            if got.trim_end_matches('/') != expected.trim_end_matches('/') {
                return Err(AuthError::Failed(format!(
                    "the authorization server redirected to `{got}`, not to `{expected}`"
                )));
            }
            Ok(AuthorizationResponse::from_query(
                target.query().unwrap_or(""),
            ))
        })
    }
}

/// Opens the authorization URL in the system browser (and prints it) and waits for the
/// redirect on `http://127.0.0.1:PORT/callback`.
///
/// ```no_run
/// use duomcp::auth::LoopbackRedirect;
/// let redirect = LoopbackRedirect::new(33418).open_browser(true);
/// # let _ = redirect;
/// ```
#[derive(Debug, Clone)]
pub struct LoopbackRedirect {
    port: u16,
    open_browser: bool,
    timeout: Duration,
}

impl LoopbackRedirect {
    /// The default port of the `duomcp` command line.
    pub const DEFAULT_PORT: u16 = 33418;

    /// Listens on `127.0.0.1:port` when the flow runs.
    pub fn new(port: u16) -> Self {
        LoopbackRedirect {
            port,
            open_browser: true,
            timeout: Duration::from_secs(300),
        }
    }

    /// Whether to launch the browser (otherwise the URL is only printed).
    pub fn open_browser(mut self, open: bool) -> Self {
        self.open_browser = open;
        self
    }

    /// How long to wait for the user (default 5 minutes).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

fn launch_browser(url: &str) {
    let mut cmd = if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else if cfg!(windows) {
        let mut c = std::process::Command::new("rundll32");
        c.arg("url.dll,FileProtocolHandler");
        c
    } else {
        std::process::Command::new("xdg-open")
    };
    cmd.arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Err(e) = cmd.spawn() {
        tracing::debug!("could not open a browser: {e}");
    }
}

const DONE_PAGE: &str =
    "<!doctype html><title>duomcp</title><p>Authorization received. You can close this window.</p>";

impl RedirectHandler for LoopbackRedirect {
    fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
    ) -> AuthFuture<'a, Result<AuthorizationResponse, AuthError>> {
        Box::pin(async move {
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", self.port))
                .await
                .map_err(|e| {
                    AuthError::Failed(format!("cannot listen on 127.0.0.1:{}: {e}", self.port))
                })?;
            eprintln!("Open this URL to authorize:\n\n  {authorization_url}\n");
            if self.open_browser {
                launch_browser(authorization_url);
            }
            let wait = async {
                loop {
                    let Ok((mut tcp, _)) = listener.accept().await else {
                        continue;
                    };
                    let mut buf = Vec::with_capacity(2048);
                    let mut chunk = [0u8; 1024];
                    // The request line and headers; a callback never needs more than 16 KiB.
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
                        match tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut chunk))
                            .await
                        {
                            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                            _ => break,
                        }
                    }
                    let head = String::from_utf8_lossy(&buf);
                    let target = head
                        .lines()
                        .next()
                        .and_then(|l| l.strip_prefix("GET "))
                        .and_then(|l| l.split(' ').next())
                        .unwrap_or("");
                    let (path, query) = target.split_once('?').unwrap_or((target, ""));
                    if path != "/callback" {
                        let _ = tcp
                            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                            .await;
                        continue;
                    }
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{DONE_PAGE}",
                        DONE_PAGE.len()
                    );
                    let _ = tcp.write_all(reply.as_bytes()).await;
                    return AuthorizationResponse::from_query(query);
                }
            };
            tokio::time::timeout(self.timeout, wait)
                .await
                .map_err(|_| AuthError::Failed("timed out waiting for the authorization".into()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_parameters_are_flagged() {
        let r = AuthorizationResponse::from_query("code=a&code=b&state=s");
        assert!(r.repeated);
        let r = AuthorizationResponse::from_query(
            "error=access_denied&error_description=no%20way&iss=https%3A%2F%2Fas",
        );
        assert_eq!(r.error.as_deref(), Some("access_denied"));
        assert_eq!(r.error_description.as_deref(), Some("no way"));
        assert_eq!(r.iss.as_deref(), Some("https://as"));
        assert!(!r.repeated);
    }

    #[tokio::test]
    async fn loopback_receives_the_callback() {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = probe.local_addr().unwrap().port();
        drop(probe);
        let handler = LoopbackRedirect::new(port)
            .open_browser(false)
            .timeout(Duration::from_secs(10));
        let uri = handler.redirect_uri();
        let task =
            tokio::spawn(async move { handler.authorize("https://as.example/authorize").await });
        // Give the listener a moment, then play the browser.
        let client = ahttp::client(Duration::from_secs(5)).unwrap();
        let mut got = None;
        for _ in 0..50 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let _ = client
                .get(format!("http://127.0.0.1:{port}/favicon.ico"))
                .send()
                .await;
            if let Ok(r) = client.get(format!("{uri}?code=c1&state=s1")).send().await {
                got = Some(r.status());
                break;
            }
        }
        assert_eq!(got, Some(http::StatusCode::OK));
        let r = task.await.unwrap().unwrap();
        assert_eq!(r.code.as_deref(), Some("c1"));
        assert_eq!(r.state.as_deref(), Some("s1"));
    }
}
