"""The official Python MCP SDK client, in 2026-07-28 mode, against `duomcp gateway` fronting
`@modelcontextprotocol/server-everything` (a 2025-11-25 server) over stdio.

    python gateway_client.py DUOMCP NODE SERVER_EVERYTHING_JS

Calls the tools that answer at once and those that elicit and sample (their requests arrive as
input-required rounds), reads a resource, gets a prompt, and prints one JSON object with what
it saw; the Rust test (crates/duomcp-cli/tests/interop.rs) checks it. Exit 1 on any failure.
"""

import json
import sys

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters

seen = {"elicited": [], "sampled": []}


async def on_elicit(_ctx, params):
    seen["elicited"].append(getattr(params, "message", ""))
    return types.ElicitResult(
        action="accept",
        content={"name": "Ada Lovelace", "check": True, "email": "ada@example.com"},
    )


async def on_sample(_ctx, params):
    seen["sampled"].append(str(params.messages[0].content))
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text="A sampled answer from the Python SDK."),
        model="python-sdk-model",
    )


def texts(result):
    return [c.text for c in result.content if getattr(c, "type", "") == "text"]


async def main(duomcp, node, script):
    server = StdioServerParameters(command=duomcp, args=["gateway", "--", node, script, "stdio"])
    async with Client(
        server,
        mode="2026-07-28",
        elicitation_callback=on_elicit,
        sampling_callback=on_sample,
        read_timeout_seconds=60,
    ) as client:
        out = {"protocol_version": client.session.protocol_version}
        names = set()
        for _ in range(50):
            tools = await client.list_tools()
            names = {t.name for t in tools.tools}
            if "trigger-sampling-request" in names:
                break
            await anyio.sleep(0.1)
        out["tools"] = sorted(names)
        calls = {
            "echo": {"message": "hello from python"},
            "get-sum": {"a": 2, "b": 3},
            "trigger-elicitation-request": {},
            "trigger-sampling-request": {"prompt": "Say hi from the Python SDK", "maxTokens": 20},
        }
        out["calls"] = {}
        for name, args in calls.items():
            try:
                result = await client.call_tool(name, args)
                out["calls"][name] = {"isError": bool(result.is_error), "text": texts(result)}
            except Exception as e:  # reported, and the Rust test fails on it
                out["calls"][name] = {"isError": True, "error": repr(e)}
        resources = await client.list_resources()
        first = resources.resources[0]
        read = await client.read_resource(first.uri)
        out["read"] = {"uri": str(first.uri), "contents": len(read.contents)}
        prompt = await client.get_prompt("simple-prompt", {})
        out["prompt_messages"] = len(prompt.messages)
        out.update(seen)
        print(json.dumps(out))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
