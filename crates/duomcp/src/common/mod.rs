//! What the server and client runtimes share, below both: neither imports the other, and both
//! import this.

#[cfg(feature = "redis")]
pub(crate) mod bus_counts;
pub mod correlation;
#[cfg(feature = "skills")]
pub(crate) mod frontmatter;
#[cfg(feature = "server")]
pub(crate) mod scope;
#[cfg(feature = "skills")]
pub mod skills;
#[cfg(feature = "events")]
pub mod webhook;

/// The boxed future a store method returns ([`TaskStore`](crate::server::tasks::TaskStore),
/// and the Streamable HTTP transport's `EventStore`): one type under both names, so the
/// traits stay object-safe.
#[cfg(feature = "server")]
pub type StoreFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
