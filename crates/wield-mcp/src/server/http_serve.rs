//! Serving the router on a TCP listener, with deadlines for what a client
//! sends: a request's headers must arrive within [`HEADER_DEADLINE`] and
//! its body within [`BODY_DEADLINE`], so a client that opens connections
//! and sends nothing (or half a request) cannot hold them, and wield's
//! tasks, for ever. Responses have no deadline: a tool call streams its
//! reply as long as it runs, and a `GET` event stream stays open.
//!
//! Until one of its requests carries the token, a connection is also one of
//! the few [`Unauthenticated`] ones: closed after
//! [`UNAUTHENTICATED_DEADLINE`], or sooner when newer ones crowd it out.

use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use super::http_auth::{UNAUTHENTICATED_DEADLINE, Unauthenticated};

/// How long a client has to send a request's headers, from the start of
/// the connection or the end of the last response (so also how long an idle
/// keep-alive connection stays open).
pub const HEADER_DEADLINE: Duration = Duration::from_secs(30);

/// How long a client has to send a POSTed body once its headers came.
pub const BODY_DEADLINE: Duration = Duration::from_secs(30);

/// How long a connection has to finish once the server stops.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Accept connections on `listener` and serve `router` on each, until
/// `stop`; then ask every connection to close once its responses are done,
/// and return when all have (or [`SHUTDOWN_GRACE`] has passed).
pub async fn serve(listener: TcpListener, router: Router, stop: CancellationToken) {
    let (done, all_done) = tokio::sync::mpsc::channel::<()>(1);
    let unauthenticated = Unauthenticated::new();
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors and the like: wait, go on.
                    tracing::debug!("accepting a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        let router = router.clone();
        let stop = stop.clone();
        let done = done.clone();
        let ticket = unauthenticated.admit();
        tokio::spawn(async move {
            let for_requests = ticket.clone();
            let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                let mut request = request.map(Body::new);
                request.extensions_mut().insert(for_requests.clone());
                router.clone().oneshot(request)
            });
            // HTTP/1 only (what MCP clients speak): a server that also
            // took HTTP/2 would first read to tell the two apart, and that
            // read has no deadline, so a connection sending nothing would
            // stay open; here the deadline runs from the connection's start.
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_DEADLINE)
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            tokio::pin!(connection);
            let deadline = tokio::time::sleep(UNAUTHENTICATED_DEADLINE);
            tokio::pin!(deadline);
            let mut deadline_passed = false;
            loop {
                tokio::select! {
                    served = connection.as_mut() => {
                        if let Err(e) = served {
                            tracing::trace!("serving a connection: {e}");
                        }
                        break;
                    }
                    () = stop.cancelled() => {
                        // Responses under way end as their sessions close; a
                        // request still arriving is not waited for long.
                        connection.as_mut().graceful_shutdown();
                        let _ = tokio::time::timeout(SHUTDOWN_GRACE, connection).await;
                        break;
                    }
                    // Crowded out by newer unauthenticated connections.
                    () = ticket.closed().cancelled() => break,
                    () = deadline.as_mut(), if !deadline_passed => {
                        deadline_passed = true;
                        if ticket.is_pending() {
                            break;
                        }
                    }
                }
            }
            ticket.release();
            drop(done);
        });
    }
    drop(done);
    let mut all_done = all_done;
    let _ = all_done.recv().await;
}
