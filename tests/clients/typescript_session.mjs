// One MCP session against `polisd mcp` with the official TypeScript SDK (run by tests/mcp_clients.rs).
// argv: POLISD POLIS_ROOT CITIZEN. Prints one JSON line per step; exits non-zero on failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [binary, root, citizen] = process.argv.slice(2);
const say = (o) => console.log(JSON.stringify(o));
const client = new Client({ name: "polisd-conformance", version: "1" });
await client.connect(new StdioClientTransport({ command: binary, args: ["mcp", root], stderr: "ignore" }));
say({ step: "connected", protocol: client.transport?.protocolVersion ?? null, server: client.getServerVersion()?.name });
const tools = await client.listTools();
say({ step: "tools", names: tools.tools.map((t) => t.name) });
for (const [name, args] of [
  ["polis_status", {}],
  ["polis_open_contract", { title: "Fix the signup", opened_by: citizen }],
  ["polis_list_contracts", { state: "open" }],
  ["polis_log", { citizen, verb: "noted progress", note: "over an MCP SDK" }],
  ["polis_log", { citizen, verb: "noted | progress" }],
  ["polis_settle_contract", { contract_id: "fix-the-signup", quality: 4, by: citizen }],
]) {
  const r = await client.callTool({ name, arguments: args });
  say({ step: "call", tool: name, isError: r.isError ?? false, text: r.content.map((c) => c.text ?? "").join("").slice(0, 2000) });
}
const res = await client.listResources();
const uris = res.resources.map((r) => r.uri);
say({ step: "resources", uris });
for (const uri of uris) {
  const r = await client.readResource({ uri });
  say({ step: "read", uri, bytes: r.contents.reduce((n, c) => n + (c.text ?? "").length, 0) });
}
await client.close();
