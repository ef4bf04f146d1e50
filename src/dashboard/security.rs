//! The dashboard's guard, applied to every request before any page runs:
//!
//! - **Host allow-list.** A `Host` header must name `localhost`, an IP literal, or a name in
//!   `[dashboard] allowed_hosts`, with the bound port (or none). A DNS-rebinding page reaches
//!   the loopback socket under the attacker's own host name, so it gets 403.
//! - **Token off loopback.** When the listen address is not a loopback address, every request
//!   needs the token printed at start: `?token=…` once (it is then kept in a `SameSite=Strict`,
//!   `HttpOnly` cookie), the cookie, or `Authorization: Bearer …`. Otherwise 401.
//! - **Methods.** GET and HEAD everywhere; POST only to the console's actions (`/p/{n}/act/…`),
//!   405 otherwise, with the methods the address takes. A POST whose `Origin` is not this
//!   server gets 403.
//! - **CSRF.** Every visitor gets a random `polisd_csrf` cookie (`SameSite=Strict`,
//!   `HttpOnly`) and the pages put the same value in each form; an action runs only when the
//!   form's `csrf` field equals the cookie ([`Csrf::accepts`]). A page of another site can
//!   neither read the value nor send the cookie.
//! - **Headers.** A strict `Content-Security-Policy` (scripts and styles only from this server,
//!   no inline script, no framing), `X-Content-Type-Options: nosniff`, `Referrer-Policy:
//!   same-origin` (no page address leaves for another site; `no-referrer` would make the
//!   browser send `Origin: null` on the console's own forms), `Cache-Control: no-store`.

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const COOKIE: &str = "polisd_token";
const CSRF_COOKIE: &str = "polisd_csrf";

/// The visitor's CSRF token, put in the request's extensions by [`guard`].
#[derive(Debug, Clone)]
pub struct Csrf {
    pub token: String,
    /// Whether the request carried it in its cookie (a token made just now proves nothing).
    pub from_cookie: bool,
}

impl Csrf {
    /// Whether a form's `csrf` field proves the form came from one of this server's pages.
    pub fn accepts(&self, field: Option<&str>) -> bool {
        self.from_cookie && field.is_some_and(|f| same(f, &self.token))
    }
}

fn random_hex(bytes: usize) -> String {
    use rand::Rng as _;
    let raw: Vec<u8> = (0..bytes).map(|_| rand::rng().random()).collect();
    crate::protocol::digest::hex(&raw)
}

/// What the guard checks against.
#[derive(Debug, Clone)]
pub struct Guard {
    pub port: u16,
    pub allowed_hosts: Vec<String>,
    /// Required when serving off loopback.
    pub token: Option<String>,
}

impl Guard {
    /// The guard for a server bound to `addr`: a fresh random token unless it is loopback.
    pub fn for_addr(addr: SocketAddr, allowed_hosts: &[String]) -> Guard {
        let token = (!addr.ip().is_loopback()).then(|| random_hex(24));
        Guard {
            port: addr.port(),
            allowed_hosts: allowed_hosts
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect(),
            token,
        }
    }

    /// Whether a `Host` header value is one this server answers to.
    pub fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let (name, port) = split_host(&host);
        if let Some(p) = port {
            if p != self.port {
                return false;
            }
        }
        let bare = name.trim_start_matches('[').trim_end_matches(']');
        name == "localhost"
            || bare.parse::<IpAddr>().is_ok()
            || self
                .allowed_hosts
                .iter()
                .any(|a| a == &host || split_host(a).0 == name && split_host(a).1.is_none())
    }
}

/// `name:port` → (`name`, `Some(port)`); handles `[::1]:7341`. A port that does not parse
/// makes the whole value a name, which then matches nothing.
fn split_host(host: &str) -> (&str, Option<u16>) {
    let colon = if host.starts_with('[') {
        host.find("]:").map(|i| i + 1)
    } else if host.matches(':').count() == 1 {
        host.find(':')
    } else {
        None
    };
    match colon {
        Some(i) => match host[i + 1..].parse() {
            Ok(p) => (&host[..i], Some(p)),
            Err(_) => (host, None),
        },
        None => (host, None),
    }
}

/// The middleware: see the module documentation.
pub async fn guard(State(g): State<Arc<Guard>>, mut request: Request, next: Next) -> Response {
    let mut response = match refusal(&g, &request) {
        Some(refused) => refused,
        None => {
            let csrf = match cookie(&request, CSRF_COOKIE).filter(|t| is_csrf_shaped(t)) {
                Some(token) => Csrf {
                    token,
                    from_cookie: true,
                },
                None => Csrf {
                    token: random_hex(16),
                    from_cookie: false,
                },
            };
            let set_csrf = (!csrf.from_cookie).then(|| {
                format!(
                    "{CSRF_COOKIE}={}; Path=/; HttpOnly; SameSite=Strict",
                    csrf.token
                )
            });
            request.extensions_mut().insert(csrf);
            // A token given in the query is kept in a cookie, so links and the event stream
            // work without repeating it.
            let cookie = g
                .token
                .as_ref()
                .filter(|t| query_token(&request).is_some_and(|q| same(&q, t)))
                .map(|t| format!("{COOKIE}={t}; Path=/; HttpOnly; SameSite=Strict"));
            let mut response = next.run(request).await;
            for c in cookie.into_iter().chain(set_csrf) {
                if let Ok(v) = HeaderValue::from_str(&c) {
                    response.headers_mut().append(header::SET_COOKIE, v);
                }
            }
            response
        }
    };
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// The response refusing `request`, or `None` when it may go on.
fn refusal(g: &Guard, request: &Request) -> Option<Response> {
    let action = is_action(request.uri().path());
    let method = request.method();
    let allowed =
        method == Method::GET || method == Method::HEAD || action && method == Method::POST;
    if !allowed {
        // An action's address takes POST alone (GET there is refused too, by the console).
        let (allow, why) = if action {
            (
                "POST",
                "this address takes a console form (POST) only; use the form on the \
                 dashboard's page\n",
            )
        } else {
            (
                "GET, HEAD",
                "only GET and HEAD here; the console's forms POST to /p/N/act/...\n",
            )
        };
        let mut r = (StatusCode::METHOD_NOT_ALLOWED, why).into_response();
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(allow));
        return Some(r);
    }
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if method == Method::POST {
        let origin = request
            .headers()
            .get(header::ORIGIN)
            .and_then(|o| o.to_str().ok());
        let same_origin = origin.is_none_or(|o| {
            o.strip_prefix("http://")
                .is_some_and(|h| h.eq_ignore_ascii_case(host))
        });
        if !same_origin {
            return Some(
                (
                    StatusCode::FORBIDDEN,
                    "this form was sent from another site; use the dashboard's own pages\n",
                )
                    .into_response(),
            );
        }
    }
    if !g.host_allowed(host) {
        return Some(
            (
                StatusCode::FORBIDDEN,
                format!(
                    "Host {host:?} is not one this dashboard answers to (localhost, an IP address, \
                     or a name in [dashboard] allowed_hosts, on port {}); add it to allowed_hosts \
                     if you meant to reach it by that name\n",
                    g.port
                ),
            )
                .into_response(),
        );
    }
    if let Some(token) = &g.token {
        if !presented(request, token) {
            return Some(
                (
                    StatusCode::UNAUTHORIZED,
                    "this dashboard listens off loopback, so it needs its token: open the URL \
                     polisd printed at start (it ends in ?token=...), or send \
                     `Authorization: Bearer <token>`\n",
                )
                    .into_response(),
            );
        }
    }
    None
}

fn presented(request: &Request, token: &str) -> bool {
    let headers = request.headers();
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .is_some_and(|(_, t)| same(t.trim(), token));
    let by_cookie = cookie(request, COOKIE).is_some_and(|t| same(&t, token));
    bearer || by_cookie || query_token(request).is_some_and(|q| same(&q, token))
}

/// The value of cookie `name`, if the request has it.
fn cookie(request: &Request, name: &str) -> Option<String> {
    request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| {
            c.trim()
                .strip_prefix(name)
                .and_then(|c| c.strip_prefix('='))
                .map(str::to_string)
        })
}

fn is_csrf_shaped(token: &str) -> bool {
    token.len() == 32 && token.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether `path` is one of the console's actions, `/p/{n}/act/{action}`.
pub fn is_action(path: &str) -> bool {
    let mut parts = path.trim_start_matches('/').split('/');
    parts.next() == Some("p")
        && parts.next().is_some_and(|n| n.parse::<usize>().is_ok())
        && parts.next() == Some("act")
        && parts.next().is_some_and(|a| !a.is_empty())
        && parts.next().is_none()
}

fn query_token(request: &Request) -> Option<String> {
    request
        .uri()
        .query()?
        .split('&')
        .find_map(|kv| kv.strip_prefix("token="))
        .map(str::to_string)
}

/// Compares without stopping at the first difference, so timing says nothing of the token.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(hosts: &[&str]) -> Guard {
        Guard {
            port: 7341,
            allowed_hosts: hosts.iter().map(|h| h.to_string()).collect(),
            token: None,
        }
    }

    #[test]
    fn loopback_names_and_ip_literals_on_the_bound_port_are_allowed() {
        let g = guard(&[]);
        for host in [
            "localhost:7341",
            "127.0.0.1:7341",
            "[::1]:7341",
            "localhost",
            "192.168.1.4:7341",
        ] {
            assert!(g.host_allowed(host), "{host}");
        }
    }

    #[test]
    fn rebinding_names_and_other_ports_are_refused() {
        let g = guard(&["polis.lan"]);
        for host in [
            "evil.example:7341",
            "localhost.evil.example:7341",
            "127.0.0.1:8080",
            "",
            "localhost:x",
        ] {
            assert!(!g.host_allowed(host), "{host}");
        }
        assert!(g.host_allowed("polis.lan:7341"));
        assert!(g.host_allowed("POLIS.LAN"));
    }

    #[test]
    fn tokens_are_made_only_off_loopback() {
        let lo = Guard::for_addr("127.0.0.1:0".parse().unwrap(), &[]);
        assert!(lo.token.is_none());
        let off = Guard::for_addr("0.0.0.0:0".parse().unwrap(), &[]);
        assert_eq!(off.token.as_deref().map(str::len), Some(48));
    }
}
