//! The dashboard's accept loop: a server that a visitor cannot starve, and that cannot starve
//! the daemon it runs beside.
//!
//! - **Header timeout.** A connection whose request header is not complete within
//!   [`HEADER_TIMEOUT`] is closed, and so is one idle that long between requests (hyper's
//!   header timer also runs while a kept-alive connection waits for its next request).
//! - **Request timeout.** A request (header, body and page) not answered within
//!   [`REQUEST_TIMEOUT`] gets 503; the event stream is exempt, it is meant to stay open.
//! - **Write timeout.** A connection whose answer has waited [`WRITE_TIMEOUT`] for the client
//!   to read any of it is closed: a client that pipelines requests and never reads the answers
//!   would otherwise hold its slot for good, as no other timer runs while hyper writes.
//! - **Connection cap.** At most [`Limits::connections`] connections are served at once; one
//!   more is answered `503` in a single non-blocking write and closed at once, so refused
//!   connections hold no descriptor and no memory.
//! - **Descriptors for the daemon.** The cap is lowered to leave [`RESERVED_FDS`] descriptors
//!   of the process's limit to the daemon (watches, locks, writes), whatever a visitor does.
//! - **Event-stream cap.** At most [`Limits::event_streams`] `/events` streams at once (see
//!   [`EventStreams`]); one more gets 503.
//!
//! Memory is bounded by these caps times hyper's read buffer ([`MAX_BUFFER`]).

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

/// How long a request header (or the wait for the next one) may take.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one request may take once its header is read, the event stream excepted.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a write may wait for the client to read before the connection is closed.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// Descriptors of the process's limit left to the daemon.
pub const RESERVED_FDS: usize = 256;
/// hyper's per-connection read buffer (a header larger than this is refused).
const MAX_BUFFER: usize = 64 * 1024;

/// The answer to a connection over the cap, written in one go before closing.
const BUSY: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n\
Retry-After: 5\r\nConnection: close\r\nContent-Length: 72\r\n\r\n\
the dashboard has too many open connections; try again in a few seconds\n";

/// The caps the server applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub connections: usize,
    pub event_streams: usize,
}

impl Limits {
    /// The configured caps, the connection cap lowered to fit `fd_limit` (the process's
    /// descriptor limit) minus [`RESERVED_FDS`]. Never below one.
    pub fn fitted(connections: usize, event_streams: usize, fd_limit: Option<u64>) -> Limits {
        let room = fd_limit.map_or(usize::MAX, |l| {
            usize::try_from(l)
                .unwrap_or(usize::MAX)
                .saturating_sub(RESERVED_FDS)
        });
        let connections = connections.min(room).max(1);
        Limits {
            connections,
            event_streams: event_streams.clamp(1, connections),
        }
    }
}

/// The process's soft descriptor limit, raised to the hard limit first where allowed.
pub fn descriptor_limit() -> Option<u64> {
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit.rlim_cur = limit.rlim_max;
            }
        }
        // `rlim_t` is not `u64` on every platform.
        #[allow(clippy::unnecessary_cast)]
        let current = limit.rlim_cur as u64;
        (limit.rlim_cur != libc::RLIM_INFINITY).then_some(current)
    }
}

/// The count of open event streams, shared by the handler; a [`StreamSlot`] holds one.
#[derive(Debug)]
pub struct EventStreams {
    open: AtomicUsize,
    cap: usize,
}

impl EventStreams {
    pub fn new(cap: usize) -> Arc<EventStreams> {
        Arc::new(EventStreams {
            open: AtomicUsize::new(0),
            cap,
        })
    }

    /// A slot, or `None` when [`Limits::event_streams`] are open.
    pub fn take(self: &Arc<Self>) -> Option<StreamSlot> {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.cap).then_some(n + 1)
            })
            .ok()?;
        Some(StreamSlot(Arc::clone(self)))
    }

    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }
}

/// One open event stream; dropping it (the client went away) frees the slot.
#[derive(Debug)]
pub struct StreamSlot(Arc<EventStreams>);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Serves `app` on `listener` under `limits` until the task is dropped.
pub async fn serve(listener: tokio::net::TcpListener, app: Router, limits: Limits) {
    let slots = Arc::new(Semaphore::new(limits.connections));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_buf_size(MAX_BUFFER);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors or memory: wait rather than spin; the daemon goes on.
                tracing::warn!("dashboard: accepting a connection failed: {e}");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let Ok(slot) = Arc::clone(&slots).try_acquire_owned() else {
            let _ = stream.try_write(BUSY);
            continue;
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        // A write that waits WRITE_TIMEOUT for the client to read fails; the timer starts
        // when a write finds the socket full and stops at the next that goes through.
        let mut stream = tokio_io_timeout::TimeoutStream::new(stream);
        stream.set_write_timeout(Some(WRITE_TIMEOUT));
        let connection = http.serve_connection(TokioIo::new(Box::pin(stream)), service);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("dashboard: a connection ended: {e}");
            }
            drop(slot);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_cap_leaves_descriptors_to_the_daemon() {
        assert_eq!(Limits::fitted(256, 64, Some(1024)).connections, 256);
        assert_eq!(Limits::fitted(256, 64, Some(400)).connections, 144);
        assert_eq!(
            Limits::fitted(256, 64, Some(100)),
            Limits {
                connections: 1,
                event_streams: 1
            }
        );
        assert_eq!(Limits::fitted(256, 64, None).connections, 256);
    }

    #[test]
    fn event_stream_slots_are_capped_and_freed_on_drop() {
        let streams = EventStreams::new(2);
        let a = streams.take().unwrap();
        let _b = streams.take().unwrap();
        assert!(streams.take().is_none());
        drop(a);
        assert!(streams.take().is_some());
    }

    #[test]
    fn the_busy_answer_s_length_is_right() {
        let text = std::str::from_utf8(BUSY).unwrap();
        let (_, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(text.contains(&format!("Content-Length: {}\r\n", body.len())));
    }
}
