//! `polisd mcp`: the polis as an MCP server over stdio, on the official Rust SDK (`rmcp`).
//!
//! A front end like the commands: each tool gathers its arguments and calls `operations/`,
//! nothing here reads or writes a polis file itself. Tool names, the resources and the error
//! codes are the reference MCP server's (`polis_status`, `polis://state`, `polis://replay`,
//! −32601 for an unknown method, −32602 for an unknown tool or arguments its schema rejects,
//! −32002 for an unknown resource, −32700 for a line that is not JSON), so an agent configured
//! for the reference keeps working; polisd adds `polis_prime`, `polis_notices` and
//! `polis_amendments`. A tool that fails answers `isError` with the reason. Descriptions are
//! one line each: every session pays for them in tokens.
//!
//! Every answer is one of rmcp's typed results, so the server speaks each protocol version rmcp
//! offers as that version requires: on 2026-07-28 (reached through `server/discover`) rmcp adds
//! `resultType` and the cache hints, and for a client that negotiated an older version through
//! `initialize` it leaves them out.
//!
//! stdout carries the protocol only. The SDK drops a line that is not UTF-8 or not JSON without
//! a reply and calls a `tools/call` with array `arguments` (or a call, a read or an
//! `initialize` whose `params` the method cannot take) an unknown method, so a small filter in
//! front of it answers those itself (−32700, −32602), and a message over [`MAX_MESSAGE_BYTES`]
//! with −32600, and the session goes on. It also refuses (−32600,
//! nothing done) a request whose id is that of one still being answered: the SDK ran both and
//! sent one answer, so the client never learned of one of its writes.

mod arguments;
mod catalog;
mod refusal;
mod tools;

use crate::operations::published::KeptPolis;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The server: one polis, and the polis as it last read it (see [`KeptPolis`]).
#[derive(Debug, Clone)]
pub struct PolisServer {
    root: PathBuf,
    kept: Arc<Mutex<KeptPolis>>,
    after_sent: Arc<AwaitingDelivery>,
}

/// What the answers not yet written to the client record once they are (see
/// [`tools::AfterSent`]), by their JSON-RPC request id as JSON text.
#[derive(Default)]
struct AwaitingDelivery {
    waiting: Mutex<std::collections::HashMap<String, tools::AfterSent>>,
    /// Held from the write of such an answer until what it records is written: a client that
    /// calls again the moment it has the answer finds its notices already marked read.
    delivering: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for AwaitingDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AwaitingDelivery")
    }
}

impl AwaitingDelivery {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, tools::AfterSent>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What the answer on this output line records once it is written and flushed.
    fn answered(&self, line: &str) -> Option<tools::AfterSent> {
        let mut waiting = self.lock();
        if waiting.is_empty() {
            return None;
        }
        let message: Value = serde_json::from_str(line).ok()?;
        message.get("result")?;
        waiting.remove(&message.get("id")?.to_string())
    }
}

const INSTRUCTIONS: &str =
    "polisd serves a Polis (_polis/): contracts routed to the best citizen, \
notices, votes. Start a session with polis_prime (your id as `citizen`); check polis_notices \
between tasks.";

/// The resources, as the reference offers them: (uri, name, description, MIME type).
const RESOURCES: [(&str, &str, &str, &str); 4] = [
    (
        "polis://state",
        "Polis state",
        "Citizens, open contracts, leaders, proposed amendments (JSON).",
        "application/json",
    ),
    (
        "polis://replay",
        "Polis Replay",
        "Markdown report of what the team did and learned.",
        "text/markdown",
    ),
    (
        "polis://replay/redacted",
        "Polis Replay (redacted)",
        "The Replay for public sharing: citizens anonymous, free text dropped.",
        "text/markdown",
    ),
    (
        "polis://constitution",
        "Constitution",
        "The polis CONSTITUTION.md.",
        "text/markdown",
    ),
];

impl PolisServer {
    /// A server without a watcher: each call that reads the settled contracts stats them all.
    pub fn new(root: &Path) -> PolisServer {
        PolisServer::keeping(root, KeptPolis::unwatched())
    }

    fn keeping(root: &Path, kept: KeptPolis) -> PolisServer {
        PolisServer {
            root: root.to_path_buf(),
            kept: Arc::new(Mutex::new(kept)),
            after_sent: Arc::default(),
        }
    }

    /// These paths may have changed (`None`: anything may have), as the watcher reports them.
    fn note_changed(&self, batch: &crate::daemon::watch::Batch) {
        let paths: Vec<String> = batch
            .events
            .iter()
            .map(|e| e.path.to_string_lossy().replace('\\', "/"))
            .collect();
        self.kept
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .note_changed(
                batch
                    .rescan
                    .is_none()
                    .then(|| paths.iter().map(String::as_str)),
            );
    }

    /// A resource's text, or `None` when there is no such resource (or no constitution).
    fn read(&self, uri: &str) -> Option<String> {
        let replay = |redact: bool| {
            let snapshot = crate::dashboard::view::read(&self.root, 0);
            let name = crate::dashboard::view::PolisView::name_of(&self.root);
            crate::dashboard::report::render(
                &snapshot,
                &name,
                crate::dashboard::report::Format::Markdown,
                redact
                    .then(|| crate::dashboard::report::Redaction::for_polis(&self.root))
                    .as_ref(),
            )
        };
        match uri {
            "polis://state" => Some(
                serde_json::to_string_pretty(&crate::operations::summary::state(&self.root))
                    .unwrap_or_default(),
            ),
            "polis://replay" => Some(replay(false)),
            "polis://replay/redacted" => Some(replay(true)),
            "polis://constitution" => crate::fs::snapshot::read_text(
                &self.root,
                crate::protocol::layout::CONSTITUTION,
                Some(crate::fs::snapshot::MAX_RECORD_BYTES),
            )
            .ok()
            .flatten(),
            _ => None,
        }
    }
}

impl ServerHandler for PolisServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("polisd", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(catalog::list().to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        let (root, kept) = (self.root.clone(), Arc::clone(&self.kept));
        drop(self.after_sent.delivering.lock().await);
        let (outcome, after_sent) =
            tokio::task::spawn_blocking(move || tools::call(&root, &kept, &name, &args))
                .await
                .map_err(|e| McpError::internal_error(format!("the tool stopped: {e}"), None))?;
        // Kept before the answer exists: the SDK writes it only once this returns.
        if let (Some(after), Ok(id)) = (after_sent, serde_json::to_string(&context.id)) {
            self.after_sent.lock().insert(id, after);
        }
        let result = match outcome {
            tools::Outcome::Unknown => {
                return Err(McpError::invalid_params(
                    format!("unknown tool: {}", arguments::quote(&request.name)),
                    None,
                ))
            }
            tools::Outcome::Invalid(reason) => {
                return Err(McpError::invalid_params(
                    format!("{}: {reason}", request.name),
                    None,
                ))
            }
            tools::Outcome::Done(Value::String(text)) => {
                CallToolResult::success(vec![ContentBlock::text(text)])
            }
            tools::Outcome::Done(value) => CallToolResult::success(vec![ContentBlock::text(
                serde_json::to_string_pretty(&value).unwrap_or_default(),
            )]),
            tools::Outcome::Failed(reason) => {
                CallToolResult::error(vec![ContentBlock::text(arguments::bounded(&reason))])
            }
        };
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(
            RESOURCES
                .iter()
                .map(|(uri, name, description, mime)| {
                    Resource::new(*uri, *name)
                        .with_description(*description)
                        .with_mime_type(*mime)
                })
                .collect(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let Some(&(_, _, _, mime)) = RESOURCES.iter().find(|r| r.0 == uri) else {
            return Err(McpError::resource_not_found(
                format!("resource not found: {}", arguments::quote(&uri)),
                None,
            ));
        };
        let this = self.clone();
        let u = uri.clone();
        let read = tokio::task::spawn_blocking(move || this.read(&u))
            .await
            .map_err(|e| McpError::internal_error(format!("the read stopped: {e}"), None))?;
        match read {
            Some(text) => Ok(ReadResourceResult::new(vec![
                ResourceContents::text(text, uri).with_mime_type(mime)
            ])
            .into()),
            None => Err(McpError::resource_not_found(
                format!("{uri} is not there: the polis has no CONSTITUTION.md"),
                None,
            )),
        }
    }
}

/// The longest message the server reads; a longer line is answered with an error and skipped.
/// Far above any real call (a council contribution is a few KB), far below what hurts.
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// A JSON-RPC error response from the filter in front of the SDK, as rmcp's model writes it.
fn error_line(id: Option<rmcp::model::RequestId>, error: McpError) -> String {
    serde_json::to_string(&rmcp::model::JsonRpcError::new(id, error))
        .expect("a JSON-RPC error serializes")
}

/// What the filter makes of one line of input: passed on to the SDK, or answered here.
enum Screened {
    Pass,
    Answer(String),
}

/// The ids of the client's requests passed to the SDK and not yet answered, as their JSON text
/// (so `5` and `"5"` are two ids, as JSON-RPC has them).
#[derive(Clone, Default)]
struct InFlight(Arc<Mutex<std::collections::HashSet<String>>>);

impl InFlight {
    fn ids(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<String>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes `message`'s id if it is a request: `false` when a request with that id is still
    /// being answered. Only a message the SDK reads as a request counts, read from its `text`
    /// as the SDK reads it: it answers any other (a wrong `jsonrpc`, params or `_meta` of the
    /// wrong type, a `result` beside the method, a key given twice) without its id, which would
    /// hold the id forever. A cancelled request may go unanswered: its id is free again.
    fn take(&self, message: &Value, text: &str) -> bool {
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            return true;
        };
        if method == "notifications/cancelled" {
            if let Some(id) = message.get("params").and_then(|p| p.get("requestId")) {
                self.ids().remove(&id.to_string());
            }
        }
        let id = match message.get("id") {
            Some(id @ (Value::Number(_) | Value::String(_))) => id,
            _ => return true,
        };
        match serde_json::from_str::<rmcp::model::ClientJsonRpcMessage>(text) {
            Ok(rmcp::model::JsonRpcMessage::Request(_)) => self.ids().insert(id.to_string()),
            _ => true,
        }
    }

    /// Frees the id of the SDK's `line` when it answers a request (a message with an id and no
    /// method). Only the id is kept of the line: an answer can be large, and its result was
    /// just serialised by the SDK.
    fn answered(&self, line: &str) {
        #[derive(serde::Deserialize)]
        struct Head {
            id: Option<Value>,
            method: Option<serde::de::IgnoredAny>,
        }
        if let Ok(Head {
            id: Some(id),
            method: None,
        }) = serde_json::from_str::<Head>(line)
        {
            self.ids().remove(&id.to_string());
        }
    }
}

/// Answers what the SDK would answer wrongly or not at all: bytes that are not UTF-8 or not
/// JSON (the SDK drops them silently), a message over [`MAX_MESSAGE_BYTES`], a `tools/call`
/// whose `arguments` is not an object and a request whose `params` its method cannot take (the
/// SDK would call either an unknown method), and a request
/// whose id is still in flight (the SDK would run it and answer one of the two).
fn screen(line: &[u8], truncated: bool, in_flight: &InFlight) -> Screened {
    if truncated {
        return Screened::Answer(error_line(
            None,
            McpError::invalid_request(
                format!("message over {MAX_MESSAGE_BYTES} bytes; nothing was done"),
                None,
            ),
        ));
    }
    let Ok(text) = std::str::from_utf8(line) else {
        return Screened::Answer(error_line(
            None,
            McpError::parse_error("parse error: the message is not UTF-8", None),
        ));
    };
    let Ok(message) = serde_json::from_str::<Value>(text) else {
        return Screened::Answer(error_line(
            None,
            McpError::parse_error("parse error: the message is not JSON", None),
        ));
    };
    // The id an answer from here carries: the message's, when it is a number or a string.
    let id = || {
        message
            .get("id")
            .and_then(|id| serde_json::from_value(id.clone()).ok())
    };
    if message.get("method").and_then(Value::as_str) == Some("tools/call") {
        let arguments = message.get("params").and_then(|p| p.get("arguments"));
        if let Some(other) = arguments.filter(|a| !a.is_object() && !a.is_null()) {
            return Screened::Answer(error_line(
                id(),
                McpError::invalid_params(
                    format!(
                        "`arguments` must be an object of named arguments, not {}",
                        arguments::type_name(other)
                    ),
                    None,
                ),
            ));
        }
    }
    if let Some(why) = unfit_params(&message) {
        return Screened::Answer(error_line(id(), McpError::invalid_params(why, None)));
    }
    if !in_flight.take(&message, text) {
        let shown = message.get("id").cloned().unwrap_or_default();
        return Screened::Answer(error_line(
            id(),
            McpError::invalid_request(
                format!(
                    "request id {shown} is that of a request still being answered; give each \
                     request an id of its own; nothing was done"
                ),
                None,
            ),
        ));
    }
    Screened::Pass
}

/// The methods this server answers whose `params` the SDK must parse, with the keys they
/// need and the JSON type of each.
const NEEDED_PARAMS: [(&str, &[(&str, &str)]); 3] = [
    ("tools/call", &[("name", "string")]),
    ("resources/read", &[("uri", "string")]),
    (
        "initialize",
        &[
            ("protocolVersion", "string"),
            ("capabilities", "object"),
            ("clientInfo", "object"),
        ],
    ),
];

/// Why `message`, a request for one of [`NEEDED_PARAMS`]'s methods, cannot be answered: its
/// `params` do not parse as that method's (the SDK would then take it for a method of its own
/// name and answer −32601, "method not found"). `None` when the SDK parses it as that method,
/// or it is not such a request.
fn unfit_params(message: &Value) -> Option<String> {
    let method = message.get("method")?.as_str()?;
    let (_, needed) = NEEDED_PARAMS.iter().find(|(m, _)| *m == method)?;
    message.get("id")?;
    let parsed = serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(message.clone());
    let Ok(rmcp::model::JsonRpcMessage::Request(request)) = parsed else {
        return None;
    };
    if !matches!(
        request.request,
        rmcp::model::ClientRequest::CustomRequest(_)
    ) {
        return None;
    }
    let params = message.get("params");
    let wrong = needed.iter().find_map(|(key, kind)| {
        let named = format!("`params.{key}` must be {}", a_type(kind));
        match params.and_then(|p| p.get(key)) {
            None => Some(format!("{named}, and is missing")),
            Some(v) if arguments::type_name(v) != a_type(kind) => {
                Some(format!("{named}, not {}", arguments::type_name(v)))
            }
            Some(_) => None,
        }
    });
    let wrong = wrong.unwrap_or_else(|| {
        let typed = match method {
            "tools/call" => {
                serde_json::from_value::<CallToolRequestParams>(params.cloned().unwrap_or_default())
                    .err()
            }
            "resources/read" => serde_json::from_value::<ReadResourceRequestParams>(
                params.cloned().unwrap_or_default(),
            )
            .err(),
            _ => serde_json::from_value::<rmcp::model::InitializeRequestParams>(
                params.cloned().unwrap_or_default(),
            )
            .err(),
        };
        match typed {
            Some(e) => format!(
                "`params` do not fit it: {}",
                arguments::bounded(&e.to_string())
            ),
            None => "`params` do not fit it".to_string(),
        }
    });
    Some(format!("{method}: {wrong}; nothing was done"))
}

/// A JSON type as [`arguments::type_name`] words it.
fn a_type(kind: &str) -> &'static str {
    match kind {
        "string" => "a string",
        _ => "an object",
    }
}

/// Reads one line of at most `max` bytes (without its newline) into `line`. Returns `None` at
/// the end of input, else whether the line was longer (the rest is read and dropped).
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(
    input: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<bool>> {
    line.clear();
    let mut truncated = false;
    let mut any = false;
    loop {
        let chunk = input.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(any.then_some(truncated));
        }
        any = true;
        let (part, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        let room = max.saturating_sub(line.len());
        truncated |= part.len() > room;
        line.extend_from_slice(&part[..part.len().min(room)]);
        let used = done.unwrap_or(chunk.len());
        input.consume(used);
        if done.is_some() {
            return Ok(Some(truncated));
        }
    }
}

/// Serves the polis at `root` on stdin/stdout until stdin ends.
pub fn serve(root: &Path) -> anyhow::Result<u8> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    eprintln!("polisd mcp: serving {} over stdio", root.display());
    runtime.block_on(async {
        // A watcher tells the server what changed between calls, so a call reads only that
        // (at 10k settled contracts, stat'ing each one per call was most of a call). Without
        // one, each call looks at everything.
        let watching = crate::daemon::watch::watch(root, watch_config());
        let server = match &watching {
            Ok(_) => PolisServer::keeping(root, KeptPolis::watched()),
            Err(e) => {
                eprintln!(
                    "polisd mcp: not watching {} ({e}); each call reads the polis",
                    root.display()
                );
                PolisServer::new(root)
            }
        };
        let (watcher, noting) = match watching {
            Ok((watcher, mut batches)) => {
                let server = server.clone();
                let noting = tokio::spawn(async move {
                    while let Some(batch) = batches.recv().await {
                        server.note_changed(&batch);
                    }
                });
                (Some(watcher), Some(noting))
            }
            Err(_) => (None, None),
        };
        let served = serve_on(server, tokio::io::stdin(), tokio::io::stdout()).await;
        drop(watcher);
        if let Some(noting) = noting {
            noting.abort();
        }
        served
    })?;
    Ok(0)
}

/// The watcher's settings for the MCP server: a short debounce, so that a change an agent made
/// just before its call is seen by that call.
fn watch_config() -> crate::daemon::watch::WatchConfig {
    crate::daemon::watch::WatchConfig {
        debounce: std::time::Duration::from_millis(10),
        ..Default::default()
    }
}

/// Serves `server` on a reader and writer of newline-delimited JSON-RPC.
pub async fn serve_on<R, W>(server: PolisServer, input: R, output: W) -> anyhow::Result<()>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (to_sdk, sdk_in) = tokio::io::duplex(64 * 1024);
    let (sdk_out, from_sdk) = tokio::io::duplex(64 * 1024);
    let (lines_tx, mut lines_rx) = tokio::sync::mpsc::channel::<String>(64);

    // stdin → the SDK, answering here what the SDK would drop or misname.
    let errors = lines_tx.clone();
    let in_flight = InFlight::default();
    let answered = in_flight.clone();
    let reader = tokio::spawn(async move {
        let mut to_sdk = to_sdk;
        let mut input = BufReader::new(input);
        let mut line = Vec::new();
        while let Ok(Some(truncated)) = read_line(&mut input, &mut line, MAX_MESSAGE_BYTES).await {
            if line.trim_ascii().is_empty() && !truncated {
                continue;
            }
            match screen(&line, truncated, &in_flight) {
                Screened::Answer(answer) => {
                    if errors.send(answer).await.is_err() {
                        break;
                    }
                }
                Screened::Pass => {
                    line.push(b'\n');
                    if to_sdk.write_all(&line).await.is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to_sdk.shutdown().await;
    });
    // The SDK → stdout, line by line, interleaved with the filter's errors.
    let forward = tokio::spawn(async move {
        let mut lines = BufReader::new(from_sdk).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            answered.answered(&line);
            if lines_tx.send(line).await.is_err() {
                break;
            }
        }
    });
    let after_sent = Arc::clone(&server.after_sent);
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(line) = lines_rx.recv().await {
            let after = after_sent.answered(&line);
            let _delivering = match after {
                Some(_) => Some(after_sent.delivering.lock().await),
                None => None,
            };
            if output
                .write_all(format!("{line}\n").as_bytes())
                .await
                .is_err()
                || output.flush().await.is_err()
            {
                // The client is gone: what its answers would record is dropped with them.
                break;
            }
            if let Some(after) = after {
                let _ = tokio::task::spawn_blocking(after).await;
            }
        }
    });
    match server.serve((sdk_in, sdk_out)).await {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(e) => eprintln!("polisd mcp: the session did not start: {e}"),
    }
    let _ = reader.await;
    let _ = forward.await;
    let _ = writer.await;
    Ok(())
}
