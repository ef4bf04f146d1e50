"""Tool calls against `polisd mcp` with the official Python SDK (run by tests/mcp_clients.rs).

argv: POLISD POLIS_ROOT CALLS, CALLS a JSON list of [tool, arguments]. Prints one JSON line per
call with the text it answered; exits non-zero on failure. The step ["$remove", {"path": P}]
removes the folder P between two calls, as a person might while the session runs.
"""
import asyncio, json, shutil, sys
from mcp import Client, StdioServerParameters

async def main(binary, root, calls):
    params = StdioServerParameters(command=binary, args=["mcp", root])
    async with Client(params, raise_exceptions=True) as client:
        for name, args in json.loads(calls):
            if name == "$remove":
                shutil.rmtree(args["path"])
                continue
            r = await client.call_tool(name, args)
            text = "".join(c.text for c in r.content if getattr(c, "type", "") == "text")
            print(json.dumps({"step": "call", "tool": name, "isError": r.is_error, "text": text}), flush=True)

asyncio.run(main(*sys.argv[1:4]))
