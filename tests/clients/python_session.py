"""One MCP session against `polisd mcp` with the official Python SDK (run by tests/mcp_clients.rs).

argv: MODE POLISD POLIS_ROOT CITIZEN. Prints one JSON line per step; exits non-zero on failure.
"""
import asyncio, json, sys
from mcp import Client, StdioServerParameters

async def main(mode, binary, root, citizen):
    params = StdioServerParameters(command=binary, args=["mcp", root])
    async with Client(params, mode=mode, raise_exceptions=True) as client:
        session = client.session
        print(json.dumps({"step": "connected", "protocol": session.protocol_version}), flush=True)
        tools = await client.list_tools()
        print(json.dumps({"step": "tools", "names": [t.name for t in tools.tools]}), flush=True)
        for name, args in [("polis_status", {}),
                           ("polis_open_contract", {"title": "Fix the login", "opened_by": citizen}),
                           ("polis_list_contracts", {"state": "open"}),
                           ("polis_log", {"citizen": citizen, "verb": "noted progress", "note": "over an MCP SDK"}),
                           ("polis_log", {"citizen": citizen, "verb": "noted | progress"}),
                           ("polis_settle_contract", {"contract_id": "fix-the-login", "quality": 4, "by": citizen})]:
            r = await client.call_tool(name, args)
            text = "".join(c.text for c in r.content if getattr(c, "type", "") == "text")
            print(json.dumps({"step": "call", "tool": name, "isError": r.is_error, "text": text[:2000]}), flush=True)
        res = await client.list_resources()
        uris = [str(r.uri) for r in res.resources]
        print(json.dumps({"step": "resources", "uris": uris}), flush=True)
        for uri in uris:
            r = await client.read_resource(uri)
            print(json.dumps({"step": "read", "uri": uri, "bytes": sum(len(getattr(c, "text", "") or "") for c in r.contents)}), flush=True)

asyncio.run(main(*sys.argv[1:5]))
