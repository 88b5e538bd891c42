// A server on @modelcontextprotocol/sdk 1.22.0 (installed as `sdk-2025-06-18`), whose newest
// protocol version is 2025-06-18: it knows neither 2025-11-25 nor server/discover.
// Spawned by tests/interop.rs over stdio. Every method it receives is appended, one per line,
// to the file named by INTEROP_METHOD_LOG, so the test can see the probe and the fallback.
//
//   DUOMCP_INTEROP_DIR=<dir with node_modules> node legacy_server.cjs
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { createRequire } = require('node:module');

const dir = path.resolve(process.env.DUOMCP_INTEROP_DIR ?? '');
const kit = createRequire(path.join(dir, 'package.json'));
const sdkVersion = JSON.parse(
  require('node:fs').readFileSync(path.join(dir, 'node_modules', 'sdk-2025-06-18', 'package.json'), 'utf8'),
).version;
const { Server } = kit('sdk-2025-06-18/server/index.js');
const { StdioServerTransport } = kit('sdk-2025-06-18/server/stdio.js');
const types = kit('sdk-2025-06-18/types.js');

if (types.LATEST_PROTOCOL_VERSION !== '2025-06-18') {
  throw new Error(`expected an SDK whose latest version is 2025-06-18, got ${types.LATEST_PROTOCOL_VERSION}`);
}

const server = new Server(
  { name: 'legacy-2025-06-18', version: sdkVersion },
  { capabilities: { tools: {} } },
);

server.setRequestHandler(types.ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: 'add',
      description: 'Adds two integers',
      inputSchema: {
        type: 'object',
        properties: { a: { type: 'integer' }, b: { type: 'integer' } },
        required: ['a', 'b'],
      },
    },
  ],
}));

server.setRequestHandler(types.CallToolRequestSchema, async (request) => {
  if (request.params.name !== 'add') {
    throw new types.McpError(types.ErrorCode.InvalidParams, `unknown tool ${request.params.name}`);
  }
  const { a, b } = request.params.arguments ?? {};
  return { content: [{ type: 'text', text: `${a} + ${b} = ${a + b}` }] };
});

async function main() {
  const transport = new StdioServerTransport();
  await server.connect(transport);
  const log = process.env.INTEROP_METHOD_LOG;
  const handle = transport.onmessage;
  transport.onmessage = (message, extra) => {
    if (log && message.method) fs.appendFileSync(log, `${message.method}\n`);
    handle(message, extra);
  };
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
