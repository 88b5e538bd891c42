#!/usr/bin/env python3
"""Writes the seed inputs of fuzz/corpus/<target>/ (real messages: the JSON-RPC examples of
the spec pages in /work/shared/spec/docs when present, plus hand-written ones in both
revisions). Run once to (re)seed; libFuzzer's finds, minimized with `-merge=1`, are checked in
next to them. Standard library only.

    fuzz/seeds.py [--docs /work/shared/spec/docs]
"""

import argparse
import glob
import hashlib
import json
import os
import re

ROOT = os.path.dirname(os.path.abspath(__file__))
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "seed", "version": "1"},
}


def line(v):
    return json.dumps(v, separators=(",", ":")).encode()


def write(target, data):
    d = os.path.join(ROOT, "corpus", target)
    os.makedirs(d, exist_ok=True)
    name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def spec_messages(docs):
    out = []
    for f in sorted(glob.glob(os.path.join(docs, "**", "*.md*"), recursive=True)):
        for m in re.finditer(r"```json[^\n]*\n(.*?)```", open(f, encoding="utf-8").read(), re.S):
            try:
                v = json.loads(m.group(1))
            except ValueError:
                continue
            if isinstance(v, dict) and v.get("jsonrpc") == "2.0":
                out.append(v)
    return out


def legacy_session():
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "seed", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": {"progressToken": "p"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "memo://notes/7"}},
        {"jsonrpc": "2.0", "id": 5, "method": "prompts/get",
         "params": {"name": "review", "arguments": {"text": "x"}}},
        {"jsonrpc": "2.0", "id": 6, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}},
    ]


def modern_requests():
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": MODERN_META}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": MODERN_META}},
        {"jsonrpc": "2.0", "id": "r", "method": "resources/read",
         "params": {"uri": "memo://readme", "_meta": MODERN_META}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "add", "arguments": {"a": 1, "b": "x"}, "_meta": MODERN_META}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"cursor": "bad", "_meta": MODERN_META}},
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", default="/work/shared/spec/docs")
    args = ap.parse_args()
    spec = spec_messages(args.docs) if os.path.isdir(args.docs) else []
    legacy, modern = legacy_session(), modern_requests()
    messages = spec[:40] + legacy + modern + [
        {"jsonrpc": "2.0", "id": 9, "result": {}},
        {"jsonrpc": "2.0", "id": 9, "error": {"code": -32601, "message": "nope", "data": [1]}},
    ]
    for m in messages:
        write("jsonrpc_decode", line(m))
    for raw in [b"[1,2]", b'["2.0",1,"ping"]', b"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"x\"}", b"\xff"]:
        write("jsonrpc_decode", raw)

    write("stdio_server", b"\n".join(line(m) for m in legacy) + b"\n")
    write("stdio_server", b"\n".join(line(m) for m in modern) + b"\n")
    write("stdio_server", b"\n".join(line(m) for m in spec[:30]) + b"\n")
    write("stdio_server", b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n\n[1]\n{oops\n')

    for meta in [MODERN_META, {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                               "io.modelcontextprotocol/clientCapabilities": {},
                               "io.modelcontextprotocol/logLevel": "debug", "progressToken": 7},
                 {"io.modelcontextprotocol/protocolVersion": "2099-01-01"}, ["2026-07-28", {}]]:
        write("meta", line(meta))
    write("meta", line({"name": "echo", "arguments": {}, "_meta": MODERN_META}))

    # [max, n, sizes[n]..., stream...]
    write("stdio_framing", bytes([16, 3, 1, 5, 9]) + b'{"a":1}\r\n\n   \nxxxxxxxxxxxxxxxxxxxxxxxxx\nlast')
    write("stdio_framing", bytes([255, 0]) + b"\n".join(line(m) for m in legacy[:3]))

    # [n, cuts[n]..., stream...]
    write("sse_client", bytes([2, 3, 10]) + b"id: 1-0\nretry: 500\ndata: \n\n: keep\n\nevent: message\nid: 1-1\ndata: {\"a\":1}\n\n")
    write("sse_client", bytes([1, 4]) + b"data: a\r\ndata:b\r\rdata: c\r\n\r\nid\nretry: x\n\n")

    # mode byte: 0 PRM, 1 AS metadata, 2 WWW-Authenticate
    write("oauth_metadata", b"\x00" + line({"resource": "https://mcp.example.com/mcp",
                                             "authorization_servers": ["https://auth.example.com"],
                                             "scopes_supported": ["files:read"], "x-extra": {"a": 1}}))
    write("oauth_metadata", b"\x01" + line({"issuer": "https://auth.example.com/tenant1",
                                             "authorization_endpoint": "https://auth.example.com/authorize",
                                             "token_endpoint": "https://auth.example.com/token",
                                             "code_challenge_methods_supported": ["S256"],
                                             "client_id_metadata_document_supported": True}))
    write("oauth_metadata", b'\x02Bearer error="insufficient_scope", scope="files:read files:write", '
                            b'resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"')
    write("oauth_metadata", b'\x02Negotiate abc==, DPoP algs="ES256", Bearer realm="a\\"b", error=invalid_token')

    # mode 0: schema NUL instance
    for schema, inst in [
        ({"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}, "required": ["a"]}, {"a": 1.0}),
        ({"type": "object", "additionalProperties": False, "properties": {"b": {"enum": ["x", 1]}}}, {"b": 1}),
        ({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "null"}]}, "é"),
        ({"type": "array", "items": {"const": {"k": [1]}}, "minItems": 1}, [{"k": [1.0]}]),
        ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "integer"}, 3),
    ]:
        write("schema_check", b"\x00" + line(schema) + b"\x00" + line(inst))

    # Structure-aware targets ([`arbitrary`] input): a few byte patterns to start from.
    for target in ["http_headers", "uri_template", "jwt_front_door", "request_state"]:
        for data in [b"\x00" * 16, b"\x01" + b"abc{x}/\x02\x03" * 4, bytes(range(64))]:
            write(target, data)


if __name__ == "__main__":
    main()
