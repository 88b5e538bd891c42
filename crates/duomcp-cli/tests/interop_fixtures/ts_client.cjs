// The official TypeScript SDK client (@modelcontextprotocol/sdk, pinned in interop/package.json)
// against a server command given on the command line, over stdio: lists the tools, calls
// `greet` with {"name":"Ada"}, and prints one JSON object with what it saw. Used by
// tests/interop.rs against the README quickstart example.
//
//   DUOMCP_INTEROP_DIR=<dir with node_modules> node ts_client.cjs SERVER [ARGS...]
'use strict';
const path = require('node:path');
const { createRequire } = require('node:module');

const dir = path.resolve(process.env.DUOMCP_INTEROP_DIR ?? '');
const kit = createRequire(path.join(dir, 'package.json'));
const sdkVersion = JSON.parse(
  require('node:fs').readFileSync(path.join(dir, 'node_modules', '@modelcontextprotocol/sdk', 'package.json'), 'utf8'),
).version;
const { Client } = kit('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = kit('@modelcontextprotocol/sdk/client/stdio.js');

async function main() {
  const [command, ...args] = process.argv.slice(2);
  const transport = new StdioClientTransport({ command, args, stderr: 'inherit' });
  // The client hands the negotiated version to transports that want it; stdio does not, so
  // catch it here.
  let protocolVersion = null;
  transport.setProtocolVersion = (v) => {
    protocolVersion = v;
  };
  const client = new Client({ name: 'ts-sdk-interop', version: '1.0.0' });
  await client.connect(transport);
  const tools = await client.listTools();
  const call = await client.callTool({ name: 'greet', arguments: { name: 'Ada' } });
  const out = {
    sdkVersion: sdkVersion,
    protocolVersion,
    serverInfo: client.getServerVersion(),
    tools: tools.tools,
    call,
  };
  await client.close();
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
