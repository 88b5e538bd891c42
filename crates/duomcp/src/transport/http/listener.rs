//! What the accept loop ([`serve::accept`](super::serve)) needs of a listener and of the
//! streams it accepts, so that one loop serves TCP and, on Unix, Unix domain sockets.

use std::future::Future;
use std::net::SocketAddr;
use tokio::io::{AsyncRead, AsyncWrite};

/// Who a connection came from, as the fairness caps and the logs see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Peer {
    /// A TCP peer: its address.
    Ip(SocketAddr),
    /// A peer on a Unix domain socket: one local identity for all of them (a Unix peer has no
    /// address worth telling apart; the socket file's permissions decide who may connect).
    #[cfg_attr(not(unix), allow(dead_code))]
    Local,
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::Ip(addr) => addr.fmt(f),
            Peer::Local => f.write_str("unix"),
        }
    }
}

/// A stream the accept loop serves, and moves to a worker runtime
/// ([`Workers`](super::Workers)) by way of its std form.
pub(super) trait Stream: AsyncRead + AsyncWrite + Unpin + Send + Sized + 'static {
    /// The std form, free of any runtime's reactor.
    type Std: Send + 'static;
    /// Sets what the connection wants before serving (`TCP_NODELAY` on TCP).
    fn prepare(&self, peer: Peer);
    /// Leaves the current runtime's reactor.
    fn into_std(self) -> std::io::Result<Self::Std>;
    /// Registers with the current runtime's reactor.
    fn from_std(std: Self::Std) -> std::io::Result<Self>;
}

/// A listener the accept loop accepts on.
pub(super) trait Listener: Send + Sync {
    /// The streams it accepts.
    type Io: Stream;
    /// The next connection.
    fn accept_one(&self) -> impl Future<Output = std::io::Result<(Self::Io, Peer)>> + Send;
}

impl Stream for tokio::net::TcpStream {
    type Std = std::net::TcpStream;

    fn prepare(&self, peer: Peer) {
        if let Err(e) = self.set_nodelay(true) {
            tracing::debug!(%peer, "TCP_NODELAY not set: {e}");
        }
    }

    fn into_std(self) -> std::io::Result<Self::Std> {
        tokio::net::TcpStream::into_std(self)
    }

    fn from_std(std: Self::Std) -> std::io::Result<Self> {
        tokio::net::TcpStream::from_std(std)
    }
}

impl Listener for tokio::net::TcpListener {
    type Io = tokio::net::TcpStream;

    async fn accept_one(&self) -> std::io::Result<(Self::Io, Peer)> {
        let (tcp, addr) = self.accept().await?;
        Ok((tcp, Peer::Ip(addr)))
    }
}

#[cfg(unix)]
impl Stream for tokio::net::UnixStream {
    type Std = std::os::unix::net::UnixStream;

    fn prepare(&self, _peer: Peer) {}

    fn into_std(self) -> std::io::Result<Self::Std> {
        tokio::net::UnixStream::into_std(self)
    }

    fn from_std(std: Self::Std) -> std::io::Result<Self> {
        tokio::net::UnixStream::from_std(std)
    }
}

#[cfg(unix)]
impl Listener for tokio::net::UnixListener {
    type Io = tokio::net::UnixStream;

    async fn accept_one(&self) -> std::io::Result<(Self::Io, Peer)> {
        let (stream, _) = self.accept().await?;
        Ok((stream, Peer::Local))
    }
}
