//! The far side of an agent CLI: a model API on 127.0.0.1 that speaks just enough of each
//! vendor's wire format (Anthropic's Messages, Gemini's generateContent, OpenAI's Responses
//! and Chat Completions, streamed or not as each CLI asks) for a real CLI to run a session
//! against it. It keeps every request the CLI made, so a test reads what the model would have
//! been shown, and answers each conversation turn from a script: some text, or a call of one
//! of the CLI's tools.
//!
//! This is the one imitation in these tests, and it stands for the vendor, not for anything
//! polisd talks to: the CLI, its hooks and polisd are all real.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// One request the CLI made.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub body: String,
}

/// What the model answers on one turn of the conversation.
#[derive(Debug, Clone)]
pub enum Turn {
    Text(String),
    /// A call of the CLI's tool `name` with these arguments; `namespace` is the group the CLI
    /// put the tool in, where it groups them (Codex CLI, one group per MCP server).
    Tool {
        name: String,
        input: Value,
        namespace: Option<String>,
    },
}

/// The answer to the `n`-th conversation turn (from 0), given the request's body.
type Script = dyn Fn(usize, &str) -> Turn + Send + Sync;

struct Shared {
    seen: Mutex<Vec<Seen>>,
    turns: Mutex<usize>,
    script: Box<Script>,
}

/// A running model API; stopped when dropped.
pub struct ModelApi {
    pub url: String,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ModelApi {
    /// Starts the API; `script(n, body)` is the answer to the `n`-th conversation turn (from
    /// 0), whose request's body is `body`.
    pub fn start(script: impl Fn(usize, &str) -> Turn + Send + Sync + 'static) -> ModelApi {
        let shared = Arc::new(Shared {
            seen: Mutex::new(Vec::new()),
            turns: Mutex::new(0),
            script: Box::new(script),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = shared.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = axum::Router::new().fallback(answer).with_state(state);
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        ModelApi {
            url,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Every request so far, oldest first.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap().clone()
    }

    /// The conversation turns the CLI asked for, oldest first (token counts and the like
    /// left out).
    pub fn turns(&self) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| Vendor::of(&s.path).is_some_and(|v| v != Vendor::Counting))
            .collect()
    }
}

impl Drop for ModelApi {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Vendor {
    Anthropic,
    Gemini,
    OpenAi,
    /// OpenAI's Chat Completions, which Aider speaks (through litellm).
    OpenAiChat,
    /// A token count, answered with a small number.
    Counting,
}

impl Vendor {
    fn of(path: &str) -> Option<Vendor> {
        if path.contains("count_tokens") || path.contains(":countTokens") {
            Some(Vendor::Counting)
        } else if path.starts_with("/v1/messages") {
            Some(Vendor::Anthropic)
        } else if path.contains(":generateContent") || path.contains(":streamGenerateContent") {
            Some(Vendor::Gemini)
        } else if path.starts_with("/v1/responses") {
            Some(Vendor::OpenAi)
        } else if path.starts_with("/v1/chat/completions") {
            Some(Vendor::OpenAiChat)
        } else {
            None
        }
    }
}

async fn answer(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let path = request
        .uri()
        .path_and_query()
        .map_or_else(String::new, |p| p.to_string());
    let bytes = axum::body::to_bytes(request.into_body(), 64 << 20)
        .await
        .unwrap_or_default();
    let body = String::from_utf8_lossy(&bytes).into_owned();
    shared.seen.lock().unwrap().push(Seen {
        path: path.clone(),
        body: body.clone(),
    });
    let vendor = Vendor::of(&path);
    let turn = match vendor {
        Some(Vendor::Counting) | None => None,
        Some(_) => {
            let n = {
                let mut turns = shared.turns.lock().unwrap();
                *turns += 1;
                *turns - 1
            };
            Some((n, (shared.script)(n, &body)))
        }
    };
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    // Each turn's ids are its own: a CLI keeps one call per id.
    match (vendor, turn) {
        (Some(Vendor::Anthropic), Some((n, turn))) => anthropic(&request, &turn, n),
        (Some(Vendor::Gemini), Some((_, turn))) => gemini(&path, &turn),
        (Some(Vendor::OpenAi), Some((n, turn))) => openai(&turn, n),
        (Some(Vendor::OpenAiChat), Some((n, turn))) => openai_chat(&request, &turn, n),
        (Some(Vendor::Counting), _) => json_reply(json!({"input_tokens": 1, "totalTokens": 1})),
        _ => json_reply(json!({})),
    }
}

fn json_reply(v: Value) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(v.to_string()))
        .unwrap()
}

/// Server-sent events: `(event name, data)`, the name left out where the format has none.
fn events(events: &[(Option<&str>, Value)]) -> Response {
    let text: String = events
        .iter()
        .map(|(name, data)| match name {
            Some(name) => format!("event: {name}\ndata: {data}\n\n"),
            None => format!("data: {data}\n\n"),
        })
        .collect();
    sse(text)
}

fn sse(text: String) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from(text))
        .unwrap()
}

fn anthropic(request: &Value, turn: &Turn, n: usize) -> Response {
    let (message, tool) = (format!("msg_{n:02}"), format!("toolu_{n:02}"));
    let model = request["model"].as_str().unwrap_or("claude").to_string();
    let usage = json!({"input_tokens": 1, "output_tokens": 1});
    let (block, stop) = match turn {
        Turn::Text(text) => (json!({"type": "text", "text": text}), "end_turn"),
        Turn::Tool { name, input, .. } => (
            json!({"type": "tool_use", "id": tool, "name": name, "input": input}),
            "tool_use",
        ),
    };
    if request["stream"] != json!(true) {
        return json_reply(json!({
            "id": message, "type": "message", "role": "assistant", "model": model,
            "content": [block], "stop_reason": stop, "stop_sequence": null, "usage": usage,
        }));
    }
    let (start, delta) = match turn {
        Turn::Text(text) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
        ),
        Turn::Tool { name, input, .. } => (
            json!({"type": "tool_use", "id": tool, "name": name, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": input.to_string()}),
        ),
    };
    events(&[
        (
            Some("message_start"),
            json!({"type": "message_start", "message": {
                "id": message, "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage}}),
        ),
        (
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": 0, "content_block": start}),
        ),
        (
            Some("content_block_delta"),
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            Some("message_delta"),
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                   "usage": {"output_tokens": 1}}),
        ),
        (Some("message_stop"), json!({"type": "message_stop"})),
    ])
}

fn gemini(path: &str, turn: &Turn) -> Response {
    let part = match turn {
        Turn::Text(text) => json!({"text": text}),
        Turn::Tool { name, input, .. } => {
            json!({"functionCall": {"name": name, "args": input}})
        }
    };
    let chunk = json!({
        "candidates": [{"content": {"parts": [part], "role": "model"},
                        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
    });
    if path.contains(":streamGenerateContent") {
        events(&[(None, chunk)])
    } else {
        json_reply(chunk)
    }
}

fn openai(turn: &Turn, n: usize) -> Response {
    let (response, item_id, call) = (
        format!("resp_{n:02}"),
        format!("item_{n:02}"),
        format!("call_{n:02}"),
    );
    let item = match turn {
        Turn::Text(text) => json!({
            "type": "message", "role": "assistant", "id": item_id,
            "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        Turn::Tool {
            name,
            input,
            namespace,
        } => {
            let mut call = json!({
                "type": "function_call", "id": item_id, "call_id": call, "name": name,
                "arguments": input.to_string()});
            if let Some(ns) = namespace {
                call["namespace"] = json!(ns);
            }
            call
        }
    };
    let usage = json!({"input_tokens": 1, "input_tokens_details": null, "output_tokens": 1,
                       "output_tokens_details": null, "total_tokens": 2});
    events(&[
        (
            Some("response.created"),
            json!({"type": "response.created", "response": {"id": response}}),
        ),
        (
            Some("response.output_item.done"),
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
        (
            Some("response.completed"),
            json!({"type": "response.completed", "response": {"id": response, "usage": usage}}),
        ),
    ])
}

fn openai_chat(request: &Value, turn: &Turn, n: usize) -> Response {
    let id = format!("chatcmpl_{n:02}");
    let model = request["model"].as_str().unwrap_or("gpt").to_string();
    let (message, finish) = match turn {
        Turn::Text(text) => (json!({"role": "assistant", "content": text}), "stop"),
        Turn::Tool { name, input, .. } => (
            json!({"role": "assistant", "content": null, "tool_calls": [{
                "index": 0, "id": format!("call_{n:02}"), "type": "function",
                "function": {"name": name, "arguments": input.to_string()}}]}),
            "tool_calls",
        ),
    };
    let usage = json!({"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2});
    if request["stream"] != json!(true) {
        return json_reply(json!({
            "id": id, "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }));
    }
    let chunk = |delta: Value, finish: Value| {
        json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let text: String = [chunk(message, Value::Null), chunk(json!({}), json!(finish))]
        .iter()
        .map(|data| format!("data: {data}\n\n"))
        .collect();
    // The stream ends with a line that is not JSON.
    sse(text + "data: [DONE]\n\n")
}
