"""The official Python SDK echo server for bench/compare.sh: one tool `echo {text}`.

Written the way the SDK's README shows (`MCPServer` + `@mcp.tool()`), with its stdio and
(stateful, SSE-response) Streamable HTTP defaults. Only the log level is lowered to WARNING,
so that neither uvicorn's access log nor the per-request INFO lines are measured.

    python server.py stdio
    python server.py http 8080      # http://127.0.0.1:8080/mcp
"""

import sys

from mcp.server import MCPServer

mcp = MCPServer("py-echo", log_level="WARNING")


@mcp.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


if __name__ == "__main__":
    match sys.argv[1:]:
        case ["stdio"]:
            mcp.run("stdio")
        case ["http", port]:
            mcp.run("streamable-http", host="127.0.0.1", port=int(port))
        case _:
            sys.exit("usage: python server.py stdio | python server.py http PORT")
