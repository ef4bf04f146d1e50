//! The dashboard: a web view of the polises polisd watches, with live updates, and the console
//! where a person answers what waits for them.
//!
//! A front end like the commands: it reads each polis through `fs::snapshot` and summarizes it
//! through `operations` (see [`view`]), and it writes only through the console's actions
//! ([`console`], `POST /p/{n}/act/…`, the one route the guard lets POST reach), which call
//! `operations::console`. `polisd run` starts it beside the daemon
//! ([`beside_daemon`]), fed by the daemon's published changes; `polisd serve` runs it alone
//! ([`serve_alone`]) with a watcher of its own.
//!
//! Routes: `/` (the polis picker, or the only polis), `/p/{n}/…` (the [`pages`]),
//! `/p/{n}/events` (server-sent events, one `change` event per pass that changed something),
//! `/static/…` (the stylesheet and the live-update script). Every request passes
//! [`security::guard`] first.

pub mod api;
pub mod chart;
pub mod console;
pub mod markdown;
pub mod pages;
pub mod report;
pub mod security;
pub mod server;
pub mod view;

use view::queue;

use crate::daemon::{Change, DaemonView, Sidecar};
use anyhow::Context as _;
use axum::extract::rejection::PathRejection;
use axum::extract::{Extension, Path as UrlPath, Query, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use view::PolisView;

const LIVE_JS: &str = include_str!("static/live.js");
const STYLE_CSS: &str = include_str!("static/style.css");

/// How the dashboard is served.
#[derive(Debug, Clone)]
pub struct Options {
    pub listen: SocketAddr,
    pub allowed_hosts: Vec<String>,
    pub notify_command: Option<String>,
    pub max_connections: usize,
    pub max_event_streams: usize,
}

impl Options {
    pub fn from_config(c: &crate::daemon::config::Dashboard) -> Options {
        Options {
            listen: c.listen_addr(),
            allowed_hosts: c.allowed_hosts.clone(),
            notify_command: c.notify_command.clone().filter(|c| !c.trim().is_empty()),
            max_connections: c.max_connections,
            max_event_streams: c.max_event_streams,
        }
    }
}

/// The polises shown, shared by every request.
pub struct Site {
    pub polises: Vec<Arc<PolisView>>,
    /// The open `/events` streams, against their cap.
    pub streams: Arc<server::EventStreams>,
}

/// The router for `site`, guarded by `guard`.
pub fn router(site: Arc<Site>, guard: security::Guard) -> Router {
    let mut polis_routes: Router<Arc<Site>> = Router::new();
    for page in pages::PAGES {
        let page: &'static pages::Page = page;
        let route = if page.route == "/" {
            "/p/{polis}/".to_string()
        } else {
            format!("/p/{{polis}}{}", page.route)
        };
        polis_routes = polis_routes.route(
            &route,
            get(
                move |State(site): State<Arc<Site>>,
                      Extension(csrf): Extension<security::Csrf>,
                      params: Result<UrlPath<HashMap<String, String>>, PathRejection>,
                      Query(query): Query<HashMap<String, String>>| async move {
                    // A segment that is not UTF-8 once decoded names no polis and no record.
                    let Ok(UrlPath(params)) = params else {
                        return not_found("There is no such page on this dashboard.");
                    };
                    render_page(site, page, params, query, csrf.token).await
                },
            ),
        );
    }
    polis_routes
        .route("/", get(index))
        .route("/p/{polis}", get(to_polis))
        .route("/p/{polis}/events", get(events))
        .route(
            "/p/{polis}/act/{action}",
            axum::routing::post(console::act).get(console::opened_by_link),
        )
        .route("/p/{polis}/api/{what}", get(api_answer))
        .route("/api/{what}", get(api_answer))
        .route(
            "/static/live.js",
            get(|| async { asset("text/javascript; charset=utf-8", LIVE_JS) }),
        )
        .route(
            "/static/style.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE_CSS) }),
        )
        .fallback(|| async { not_found("There is no such page on this dashboard.") })
        .with_state(site)
        .layer(axum::middleware::from_fn(within_time))
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(guard),
            security::guard,
        ))
}

/// Answers 503 to a request not done within [`server::REQUEST_TIMEOUT`] (a slow body, a stuck
/// page), so no request holds a connection slot for long; the event stream is exempt.
async fn within_time(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    if request.method() == axum::http::Method::GET && is_event_stream(request.uri().path()) {
        return next.run(request).await;
    }
    match tokio::time::timeout(server::REQUEST_TIMEOUT, next.run(request)).await {
        Ok(response) => response,
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the request took too long; try again\n",
        )
            .into_response(),
    }
}

/// Whether `path` is an event stream's, `/p/{n}/events`: only that address may stay open (a
/// console action named `events` takes a body, which must come in time like any other).
fn is_event_stream(path: &str) -> bool {
    let mut parts = path.trim_start_matches('/').split('/');
    parts.next() == Some("p")
        && parts.next().is_some_and(|n| n.parse::<usize>().is_ok())
        && parts.next() == Some("events")
        && parts.next().is_none()
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        body,
    )
        .into_response()
}

pub(crate) fn polis_of(
    site: &Site,
    params: &HashMap<String, String>,
) -> Option<(usize, Arc<PolisView>)> {
    let n: usize = params.get("polis")?.parse().ok()?;
    site.polises.get(n).map(|v| (n, Arc::clone(v)))
}

async fn index(State(site): State<Arc<Site>>) -> Response {
    if site.polises.len() == 1 {
        return Redirect::to("/p/0/").into_response();
    }
    let body = maud::html! {
        (maud::DOCTYPE)
        html lang="en" {
            (plain_head("polisd"))
            body {
                header { span.brand { "polisd" } }
                main {
                    h1 { "Polises" }
                    ul {
                        @for (i, p) in site.polises.iter().enumerate() {
                            li { a href=(format!("/p/{i}/")) { (p.name) } " " span.muted { (p.root.display().to_string()) } }
                        }
                    }
                }
            }
        }
    };
    Html(body.into_string()).into_response()
}

/// `/p/{n}/api/{state|replay}`, and `/api/…` for the first polis: see [`api`].
async fn api_answer(
    State(site): State<Arc<Site>>,
    UrlPath(mut params): UrlPath<HashMap<String, String>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    params.entry("polis".into()).or_insert_with(|| "0".into());
    let Some((_, view)) = polis_of(&site, &params) else {
        return (StatusCode::NOT_FOUND, "no such polis\n").into_response();
    };
    let what = params.get("what").cloned().unwrap_or_default();
    if what != "state" && what != "replay" {
        return (
            StatusCode::NOT_FOUND,
            "no such API: /api/state or /api/replay\n",
        )
            .into_response();
    }
    let done = tokio::task::spawn_blocking(move || {
        let snapshot = view.current();
        match what.as_str() {
            "state" => Ok(api::state(&view.name, &snapshot)),
            _ => api::replay(&snapshot, &query),
        }
    })
    .await;
    let json = [(header::CONTENT_TYPE, "application/json")];
    match done {
        Ok(Ok(body)) => (json, body.to_string()).into_response(),
        Ok(Err(refused)) => (StatusCode::BAD_REQUEST, json, refused.to_string()).into_response(),
        Err(e) => {
            tracing::error!("dashboard: an API answer failed: {e}");
            (StatusCode::INTERNAL_SERVER_ERROR, "see polisd's log\n").into_response()
        }
    }
}

/// The head of a page that belongs to no polis (the list of polises, a 404): the stylesheet
/// and a title, without the polis pages' live updates.
fn plain_head(title: &str) -> maud::Markup {
    maud::html! {
        head {
            meta charset="utf-8";
            title { (title) }
            link rel="stylesheet" href="/static/style.css";
        }
    }
}

/// A 404 a person can act on: a page (not a bare line of text) with the way back.
fn not_found(message: &str) -> Response {
    let body = maud::html! {
        (maud::DOCTYPE)
        html lang="en" {
            (plain_head("Not found · polisd"))
            body {
                header { a.brand href="/" { "polisd" } }
                main {
                    h1 { "Not found" }
                    p { (message) }
                    p { a href="/" { "Back to the dashboard" } }
                }
            }
        }
    };
    (StatusCode::NOT_FOUND, Html(body.into_string())).into_response()
}

async fn to_polis(n: Result<UrlPath<String>, PathRejection>) -> Response {
    match n.ok().and_then(|UrlPath(n)| n.parse::<usize>().ok()) {
        Some(n) => Redirect::permanent(&format!("/p/{n}/")).into_response(),
        None => not_found("This dashboard shows no polis of that number."),
    }
}

async fn render_page(
    site: Arc<Site>,
    page: &'static pages::Page,
    params: HashMap<String, String>,
    query: HashMap<String, String>,
    csrf: String,
) -> Response {
    let Some((n, view)) = polis_of(&site, &params) else {
        return not_found("This dashboard shows no polis of that number.");
    };
    let picker: Vec<(String, String)> = site
        .polises
        .iter()
        .enumerate()
        .map(|(i, p)| (format!("/p/{i}/"), p.name.clone()))
        .collect();
    // Reading the folder and rendering are blocking work: off the event loop's thread.
    let done = tokio::task::spawn_blocking(move || {
        let snapshot = view.current();
        render(page, &view, &snapshot, n, &picker, &params, &query, &csrf)
    })
    .await;
    match done {
        Ok((status, html)) => (status, Html(html)).into_response(),
        Err(e) => {
            tracing::error!("dashboard: a page failed: {e}");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page failed; see polisd's log\n",
            )
                .into_response()
        }
    }
}

/// One page of polis `n` as a whole document, with its status (200, or 404 for a record that
/// is not there); `csrf` goes in the console's forms. Pure over the snapshot: the benches time
/// it.
#[allow(clippy::too_many_arguments)]
pub fn render(
    page: &pages::Page,
    view: &PolisView,
    snapshot: &view::Snapshot,
    n: usize,
    picker: &[(String, String)],
    params: &HashMap<String, String>,
    query: &HashMap<String, String>,
    csrf: &str,
) -> (StatusCode, String) {
    let cx = pages::Context {
        snapshot,
        view,
        params,
        query,
        base: format!("/p/{n}"),
        csrf,
    };
    let (status, rendered) = match (page.render)(&cx) {
        Ok(r) => (StatusCode::OK, r),
        Err(pages::PageError::NotFound(m)) => (StatusCode::NOT_FOUND, pages::not_found(&m)),
    };
    (
        status,
        pages::frame(page, &cx, picker, &rendered).into_string(),
    )
}

/// `text/event-stream`: a `change` event (data: `{"generation":N,"paths":[...]}`) for each
/// published change. A client waits on the channel; nothing runs between changes but a
/// keep-alive comment every 30 s.
async fn events(
    State(site): State<Arc<Site>>,
    UrlPath(params): UrlPath<HashMap<String, String>>,
) -> Response {
    let Some((_, view)) = polis_of(&site, &params) else {
        return (StatusCode::NOT_FOUND, "no such polis\n").into_response();
    };
    let Some(slot) = site.streams.take() else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "30")],
            "too many live-update streams are open; the page still works, reload it to update\n",
        )
            .into_response();
    };
    let mut rx = view.changes.clone();
    rx.mark_unchanged();
    // The slot lives in the stream's state: it is freed when the client goes away. The first
    // event sets the browser's reconnection delay, so a restarted server is found quickly.
    let stream =
        futures_util::stream::unfold((rx, slot, true), |(mut rx, slot, first)| async move {
            if first {
                let retry = Event::default()
                    .retry(Duration::from_secs(1))
                    .comment("connected");
                return Some((Ok(retry), (rx, slot, false)));
            }
            rx.changed().await.ok()?;
            let change: Change = rx.borrow_and_update().clone();
            let data =
                serde_json::json!({ "generation": change.generation, "paths": change.paths });
            Some((
                Ok::<Event, std::convert::Infallible>(
                    Event::default().event("change").data(data.to_string()),
                ),
                (rx, slot, false),
            ))
        });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(30)))
        .into_response()
}

/// A bound listener, its address, and the URL to print.
pub struct Bound {
    pub listener: std::net::TcpListener,
    pub addr: SocketAddr,
    pub url: String,
    pub guard: security::Guard,
    pub limits: server::Limits,
}

/// Binds `options.listen`; the URL carries the token when one is needed.
pub fn bind(options: &Options) -> std::io::Result<Bound> {
    let listener = std::net::TcpListener::bind(options.listen)?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let guard = security::Guard::for_addr(addr, &options.allowed_hosts);
    let limits = server::Limits::fitted(
        options.max_connections,
        options.max_event_streams,
        server::descriptor_limit(),
    );
    // The URL names the address actually bound (0.0.0.0 too: it reaches this machine).
    let host = if addr.is_ipv6() {
        format!("[{}]", addr.ip())
    } else {
        addr.ip().to_string()
    };
    let url = format!("http://{host}:{}/", addr.port());
    Ok(Bound {
        listener,
        addr,
        url,
        guard,
        limits,
    })
}

/// The task serving `site` on `bound` until the process ends.
fn serve_task(
    bound: Bound,
    site: Arc<Site>,
) -> anyhow::Result<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>> {
    let listener = tokio::net::TcpListener::from_std(bound.listener)
        .context("handing the dashboard's socket to the event loop")?;
    let app = router(site, bound.guard);
    Ok(Box::pin(server::serve(listener, app, bound.limits)))
}

/// Logs where the dashboard is; the token (off loopback) is printed this once.
fn announce(bound: &Bound) -> String {
    match &bound.guard.token {
        Some(t) => {
            // The log says where, without the token (logs are kept and shipped); standard
            // error gets the one URL that carries it.
            tracing::warn!(
                "dashboard listening off loopback on {}: every request needs the token printed at start",
                bound.addr
            );
            eprintln!(
                "polisd: dashboard token (shown once): {}?token={t}",
                bound.url
            );
        }
        None => tracing::info!("dashboard at {}", bound.url),
    }
    tracing::info!(
        "dashboard limits: {} connections, {} live-update streams",
        bound.limits.connections,
        bound.limits.event_streams
    );
    bound.url.clone()
}

/// For `polisd run`: the dashboard over every watched polis, on the daemon's runtime. A busy
/// port is one warning and no dashboard, never a failed start.
pub fn beside_daemon(view: DaemonView) -> Option<Sidecar> {
    if !view.config.dashboard.enabled {
        return None;
    }
    let options = Options::from_config(&view.config.dashboard);
    let bound = match bind(&options) {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(
                "dashboard not started: cannot listen on {} ({e}); set [dashboard] listen to \
                 another port, or enabled = false",
                options.listen
            );
            return None;
        }
    };
    let site = Arc::new(Site {
        streams: server::EventStreams::new(bound.limits.event_streams),
        polises: view
            .polises
            .into_iter()
            .map(|p| Arc::new(PolisView::new(&p.root, p.changes)))
            .collect(),
    });
    let url = announce(&bound);
    if let Some(command) = &options.notify_command {
        for (i, p) in site.polises.iter().enumerate() {
            tokio::spawn(queue_notifier(
                Arc::clone(p),
                command.clone(),
                format!("{}p/{i}/", url),
            ));
        }
    }
    match serve_task(bound, site) {
        Ok(task) => Some(Sidecar {
            url: Some(url),
            task,
        }),
        Err(e) => {
            tracing::warn!("dashboard not started: {e:#}");
            None
        }
    }
}

/// For `polisd serve`: the dashboard alone over one polis, with its own (read-only) watcher.
pub fn serve_alone(
    root: PathBuf,
    options: Options,
    watch: crate::daemon::watch::WatchConfig,
    json: bool,
) -> anyhow::Result<u8> {
    crate::daemon::memory::map_large_allocations();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the event loop")?;
    runtime.block_on(async move {
        let bound = bind(&options)
            .with_context(|| format!("cannot listen on {} (is another dashboard running? choose one with --listen)", options.listen))?;
        let (tx, rx) = tokio::sync::watch::channel(Change::default());
        let (watcher, mut batches) = crate::daemon::watch::watch(&root, watch)
        .with_context(|| format!("cannot watch {}", root.display()))?;
        let site = Arc::new(Site {
            streams: server::EventStreams::new(bound.limits.event_streams),
            polises: vec![Arc::new(PolisView::new(&root, rx))],
        });
        let url = announce(&bound);
        if json {
            println!("{}", serde_json::json!({ "url": url, "polis": root }));
        } else {
            println!("polisd: dashboard for {} at {url}", root.display());
        }
        {
            use std::io::Write as _;
            let _ = std::io::stdout().flush();
        }
        if let Some(command) = options.notify_command.clone() {
            tokio::spawn(queue_notifier(
                Arc::clone(&site.polises[0]),
                command,
                format!("{url}p/0/"),
            ));
        }
        let task = serve_task(bound, Arc::clone(&site))?;
        let server = tokio::spawn(task);
        let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        loop {
            tokio::select! {
                batch = batches.recv() => {
                    let Some(batch) = batch else { break };
                    let paths: Vec<String> = batch.events.iter().map(|e| e.path.to_string_lossy().replace('\\', "/")).collect();
                    site.polises[0].note_changed(batch.rescan.is_none().then(|| paths.iter().map(String::as_str)));
                    tx.send_modify(|c| {
                        c.generation += 1;
                        c.paths = paths;
                    });
                }
                _ = tokio::signal::ctrl_c() => break,
                _ = sigterm.recv() => break,
            }
        }
        drop(watcher);
        server.abort();
        Ok(0)
    })
}

/// Runs `[dashboard] notify_command` for each new item of the human queue. Rate-limited: at
/// most one round a minute (items that arrive meanwhile go in the next round) and at most
/// [`NOTIFY_PER_ROUND`] commands a round (the rest are summed up in one more). Items present
/// at start are not news. This is the one part that reads the folder without a visitor, and
/// only when a command is configured.
async fn queue_notifier(view: Arc<PolisView>, command: String, url: String) {
    const GAP: Duration = Duration::from_secs(60);
    let mut changes = view.changes.clone();
    let mut notified: Option<std::collections::BTreeSet<String>> = None;
    let mut last_round: Option<tokio::time::Instant> = None;
    loop {
        let v = Arc::clone(&view);
        let Ok(items) = tokio::task::spawn_blocking(move || v.current().queue.clone()).await else {
            return;
        };
        if let Some(seen) = &notified {
            let new: Vec<&queue::Item> = items.iter().filter(|i| !seen.contains(&i.key)).collect();
            if !new.is_empty() {
                last_round = Some(tokio::time::Instant::now());
            }
            for item in new.iter().take(NOTIFY_PER_ROUND) {
                let link = item
                    .link
                    .as_deref()
                    .map_or_else(|| url.clone(), |l| format!("{url}{l}"));
                notify(&command, &view, &item.title, &item.action, &link).await;
            }
            if new.len() > NOTIFY_PER_ROUND {
                let more = new.len() - NOTIFY_PER_ROUND;
                let title = format!("{more} more items wait for a person");
                notify(
                    &command,
                    &view,
                    &title,
                    "Open the dashboard's overview.",
                    &url,
                )
                .await;
            }
        }
        notified = Some(items.iter().map(|i| i.key.clone()).collect());
        if changes.changed().await.is_err() {
            return;
        }
        if let Some(t) = last_round {
            tokio::time::sleep_until(t + GAP).await;
        }
        changes.borrow_and_update();
    }
}

/// Commands run per round of [`queue_notifier`] at most.
const NOTIFY_PER_ROUND: usize = 5;

async fn notify(command: &str, view: &PolisView, title: &str, action: &str, link: &str) {
    let status = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("POLISD_ITEM_TITLE", title)
        .env("POLISD_ITEM_ACTION", action)
        .env("POLISD_ITEM_URL", link)
        .env("POLISD_POLIS", &view.root)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .status()
        .await;
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => tracing::warn!("notify_command exited with {s} for {title:?}"),
        Err(e) => tracing::warn!("notify_command could not run: {e}"),
    }
}
