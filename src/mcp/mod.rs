//! `polisd mcp`: the polis as an MCP server over stdio, on the official Rust SDK (`rmcp`).
//!
//! A front end like the commands: each tool gathers its arguments and calls `operations/`,
//! nothing here reads or writes a polis file itself. Tool names, the resources and the error
//! codes are the reference MCP server's (`polis_status`, `polis://state`, −32601 for an unknown
//! method, −32602 for an unknown tool, −32002 for an unknown resource, −32700 for a line that is
//! not JSON), so an agent configured for the reference keeps working; polisd adds
//! `polis_prime`, `polis_notices` and `polis_amendments`. A tool that fails answers `isError`
//! with the reason. Descriptions are one line each: every session pays for them in tokens.
//!
//! stdout carries the protocol only. The SDK drops a line that is not JSON without a reply, so
//! a small filter in front of it answers such a line with −32700 itself, as the reference does.

mod tools;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The server: one polis.
#[derive(Debug, Clone)]
pub struct PolisServer {
    root: PathBuf,
}

const INSTRUCTIONS: &str =
    "polisd serves a Polis (_polis/): contracts routed to the best citizen, \
notices, votes. Start a session with polis_prime (your id as `citizen`); check polis_notices \
between tasks.";

fn from_json<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("the MCP model accepts what polisd builds")
}

impl PolisServer {
    pub fn new(root: &Path) -> PolisServer {
        PolisServer {
            root: root.to_path_buf(),
        }
    }

    fn read(&self, uri: &str) -> Option<(String, &'static str)> {
        match uri {
            "polis://state" => Some((
                serde_json::to_string_pretty(&crate::operations::summary::state(&self.root))
                    .unwrap_or_default(),
                "application/json",
            )),
            "polis://constitution" => crate::fs::snapshot::read_text(
                &self.root,
                crate::protocol::layout::CONSTITUTION,
                Some(crate::fs::snapshot::MAX_RECORD_BYTES),
            )
            .ok()
            .flatten()
            .map(|t| (t, "text/markdown")),
            _ => None,
        }
    }
}

impl ServerHandler for PolisServer {
    fn get_info(&self) -> ServerConfig {
        from_json(json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}, "resources": {}},
            "serverInfo": {"name": "polisd", "version": env!("CARGO_PKG_VERSION")},
            "instructions": INSTRUCTIONS,
        }))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(from_json(json!({ "tools": tools::list() })))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        let root = self.root.clone();
        let outcome = tokio::task::spawn_blocking(move || tools::call(&root, &name, &args))
            .await
            .map_err(|e| McpError::internal_error(format!("the tool stopped: {e}"), None))?;
        let result = match outcome {
            tools::Outcome::Unknown(name) => {
                return Err(McpError::invalid_params(
                    format!("unknown tool: {name}"),
                    None,
                ))
            }
            tools::Outcome::Done(value) => {
                let text = match value {
                    Value::String(s) => s,
                    other => serde_json::to_string_pretty(&other).unwrap_or_default(),
                };
                json!({"content": [{"type": "text", "text": text}], "isError": false})
            }
            tools::Outcome::Failed(reason) => {
                json!({"content": [{"type": "text", "text": reason}], "isError": true})
            }
        };
        let result: rmcp::model::CallToolResult = from_json(result);
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(from_json(json!({"resources": [
            {"uri": "polis://state", "name": "Polis state",
             "description": "Citizens, open contracts, leaders, proposed amendments (JSON).",
             "mimeType": "application/json"},
            {"uri": "polis://constitution", "name": "Constitution",
             "description": "The polis CONSTITUTION.md.", "mimeType": "text/markdown"},
        ]})))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let this = self.clone();
        let u = uri.clone();
        let read = tokio::task::spawn_blocking(move || this.read(&u))
            .await
            .map_err(|e| McpError::internal_error(format!("the read stopped: {e}"), None))?;
        match read {
            Some((text, mime)) => {
                let result: rmcp::model::ReadResourceResult = from_json(json!({
                    "contents": [{"uri": uri, "mimeType": mime, "text": text}]
                }));
                Ok(result.into())
            }
            None => Err(McpError::resource_not_found(
                format!("resource not found: {uri}"),
                None,
            )),
        }
    }
}

const PARSE_ERROR: &str =
    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#;

/// Serves the polis at `root` on stdin/stdout until stdin ends.
pub fn serve(root: &Path) -> anyhow::Result<u8> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    eprintln!("polisd mcp: serving {} over stdio", root.display());
    runtime.block_on(serve_on(
        PolisServer::new(root),
        tokio::io::stdin(),
        tokio::io::stdout(),
    ))?;
    Ok(0)
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

    // stdin → the SDK, answering lines that are not JSON with a parse error.
    let errors = lines_tx.clone();
    let reader = tokio::spawn(async move {
        let mut to_sdk = to_sdk;
        let mut lines = BufReader::new(input).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if line.trim().is_empty() {
                continue;
            }
            if serde_json::from_str::<Value>(&line).is_err() {
                if errors.send(PARSE_ERROR.to_string()).await.is_err() {
                    break;
                }
                continue;
            }
            if to_sdk
                .write_all(format!("{line}\n").as_bytes())
                .await
                .is_err()
            {
                break;
            }
        }
        let _ = to_sdk.shutdown().await;
    });
    // The SDK → stdout, line by line, interleaved with the filter's errors.
    let forward = tokio::spawn(async move {
        let mut lines = BufReader::new(from_sdk).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if lines_tx.send(line).await.is_err() {
                break;
            }
        }
    });
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(line) = lines_rx.recv().await {
            if output
                .write_all(format!("{line}\n").as_bytes())
                .await
                .is_err()
                || output.flush().await.is_err()
            {
                break;
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
