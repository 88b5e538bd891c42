// A Streamable HTTP server on the official TypeScript SDK (@modelcontextprotocol/sdk, pinned in
// interop/package.json), written as the SDK's README shows: McpServer with zod schemas, one
// stateful StreamableHTTPServerTransport per session. Binds 127.0.0.1 on a free port and
// prints `LISTENING <port>` on stdout. Spawned by tests/interop.rs.
//
//   DUOMCP_INTEROP_DIR=<dir with node_modules> node http_server.cjs
'use strict';
const { randomUUID } = require('node:crypto');
const { createServer } = require('node:http');
const path = require('node:path');
const { createRequire } = require('node:module');

const dir = path.resolve(process.env.DUOMCP_INTEROP_DIR ?? '');
const kit = createRequire(path.join(dir, 'package.json'));
const sdkVersion = JSON.parse(
  require('node:fs').readFileSync(path.join(dir, 'node_modules', '@modelcontextprotocol/sdk', 'package.json'), 'utf8'),
).version;
const { McpServer } = kit('@modelcontextprotocol/sdk/server/mcp.js');
const { StreamableHTTPServerTransport } = kit('@modelcontextprotocol/sdk/server/streamableHttp.js');
const { isInitializeRequest } = kit('@modelcontextprotocol/sdk/types.js');
const z = kit('zod/v4');

function mcpServer() {
  const server = new McpServer(
    { name: 'ts-sdk-http-fixture', version: sdkVersion },
    { capabilities: { logging: {} }, instructions: 'A fixture of the duomcp interop tests.' },
  );
  server.registerTool(
    'echo',
    { description: 'Echoes the text back', inputSchema: { text: z.string() } },
    async ({ text }) => ({ content: [{ type: 'text', text: `echo: ${text}` }] }),
  );
  server.registerTool(
    'add',
    {
      description: 'Adds two numbers, with structured output',
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
    },
    async ({ a, b }) => ({
      content: [{ type: 'text', text: `${a + b}` }],
      structuredContent: { sum: a + b },
    }),
  );
  server.registerTool(
    'notify',
    { description: 'Sends `count` log messages and progress reports, then answers', inputSchema: { count: z.number().int() } },
    async ({ count }, extra) => {
      const token = extra._meta?.progressToken;
      for (let i = 1; i <= count; i++) {
        await extra.sendNotification({
          method: 'notifications/message',
          params: { level: 'info', logger: 'fixture', data: `log ${i} of ${count}` },
        });
        if (token !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: i, total: count, message: `step ${i}` },
          });
        }
      }
      return { content: [{ type: 'text', text: `sent ${count}` }] };
    },
  );
  server.registerResource(
    'greeting',
    'fixture://greeting',
    { description: 'A fixed text', mimeType: 'text/plain' },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: 'Hello from the TypeScript SDK' }] }),
  );
  server.registerPrompt(
    'greet-prompt',
    { description: 'Asks to greet someone', argsSchema: { name: z.string() } },
    ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Please greet ${name}.` } }] }),
  );
  return server;
}

const transports = new Map(); // session id -> transport

async function handle(req, res) {
  const sessionId = req.headers['mcp-session-id'];
  if (req.method === 'POST') {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      res.writeHead(400, { 'content-type': 'application/json' }).end(
        JSON.stringify({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null }),
      );
      return;
    }
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport) {
      if (sessionId || !isInitializeRequest(body)) {
        res.writeHead(sessionId ? 404 : 400, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            jsonrpc: '2.0',
            error: { code: -32000, message: sessionId ? 'Session not found' : 'Bad Request: No valid session ID provided' },
            id: null,
          }),
        );
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
      await mcpServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
    return;
  }
  const transport = sessionId ? transports.get(sessionId) : undefined;
  if (!transport) {
    res.writeHead(sessionId ? 404 : 400).end();
    return;
  }
  await transport.handleRequest(req, res);
}

const http = createServer((req, res) => {
  if (!req.url.startsWith('/mcp')) {
    res.writeHead(404).end();
    return;
  }
  handle(req, res).catch((e) => {
    console.error(e);
    if (!res.headersSent) res.writeHead(500).end();
  });
});
http.listen(0, '127.0.0.1', () => {
  process.stdout.write(`LISTENING ${http.address().port}\n`);
});
