-- wrk (https://github.com/wg/wrk, Debian package `wrk`) posting MCP `tools/call echo` requests,
-- the load of bench/compare.sh's wrk column (WRK=1; see bench/README.md):
--
--   wrk -t2 -c32 -d5s -s bench/wrk-echo.lua http://127.0.0.1:PORT/mcp -- modern PAYLOAD
--   wrk -t32 -c32 -d5s -s bench/wrk-echo.lua http://127.0.0.1:PORT/mcp -- legacy PAYLOAD SID1,SID2,...
--
-- modern (2026-07-28): no handshake; the body carries `_meta` with the protocol version, the
-- client info and capabilities, and the request the `MCP-Protocol-Version`, `Mcp-Method` and
-- `Mcp-Name` headers, as `duomcp bench` sends them.
-- legacy (2025-11-25): one session per wrk thread (run as many threads as connections), the
-- session ids made beforehand (initialize + notifications/initialized), comma-separated.
--
-- Every request of a thread is the same bytes (built once in init; the JSON-RPC id repeats,
-- which both revisions allow for requests that are not in flight at the same time). wrk counts
-- a status above 399 as an error; `response` is not defined, so wrk does not hand bodies to
-- Lua (that would make the load generator the bottleneck). compare.sh checks one answer of each
-- server with curl before it runs wrk.

local counter = 0
local threads = {}

function setup(thread)
  counter = counter + 1
  thread:set("index", counter)
  table.insert(threads, thread)
end

local req

function init(args)
  local era = args[1] or "modern"
  local payload = tonumber(args[2] or "64")
  -- The text `duomcp bench` sends: a..z repeated.
  local chars = {}
  for i = 0, payload - 1 do
    chars[#chars + 1] = string.char(97 + i % 26)
  end
  local text = table.concat(chars)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  if era == "modern" then
    wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
    wrk.headers["Mcp-Method"] = "tools/call"
    wrk.headers["Mcp-Name"] = "echo"
    wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
      .. '"arguments":{"text":"' .. text .. '"},"_meta":{'
      .. '"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
      .. '"io.modelcontextprotocol/clientCapabilities":{},'
      .. '"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1"}}}}'
  else
    local sessions = {}
    for s in string.gmatch(args[3] or "", "[^,]+") do
      table.insert(sessions, s)
    end
    local sid = sessions[((index or 1) - 1) % math.max(#sessions, 1) + 1]
    wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
    if sid then
      wrk.headers["Mcp-Session-Id"] = sid
    end
    wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
      .. '"arguments":{"text":"' .. text .. '"}}}'
  end
  req = wrk.format()
end

function request()
  return req
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRK_RESULT requests=%d duration_us=%d p50_us=%d p99_us=%d errors=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.status + e.timeout))
end
