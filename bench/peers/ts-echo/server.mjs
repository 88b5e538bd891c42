// The official TypeScript SDK echo server for bench/compare.sh: one tool `echo {text}`,
// written the way the SDK's README and examples show (McpServer + registerTool with a zod
// schema; stdio transport; stateful Streamable HTTP on express, one McpServer per session).
//
//   node server.mjs stdio
//   node server.mjs http 8080      # http://127.0.0.1:8080/mcp
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpExpressApp } from '@modelcontextprotocol/sdk/server/express.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod/v4';

function echoServer() {
  const server = new McpServer({ name: 'ts-echo', version: '1.0.0' });
  server.registerTool(
    'echo',
    { description: 'Echo the text back', inputSchema: { text: z.string().describe('The text to send back') } },
    async ({ text }) => ({ content: [{ type: 'text', text }] }),
  );
  return server;
}

async function stdio() {
  await echoServer().connect(new StdioServerTransport());
}

function http(port) {
  const app = createMcpExpressApp({ host: '127.0.0.1' });
  const transports = new Map(); // session id -> transport

  app.post('/mcp', async (req, res) => {
    const sessionId = req.headers['mcp-session-id'];
    let transport = sessionId ? transports.get(sessionId) : undefined;
    if (!transport) {
      if (sessionId || !isInitializeRequest(req.body)) {
        res.status(sessionId ? 404 : 400).json({
          jsonrpc: '2.0',
          error: { code: -32000, message: sessionId ? 'Session not found' : 'Bad Request: No valid session ID provided' },
          id: null,
        });
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
      await echoServer().connect(transport);
    }
    await transport.handleRequest(req, res, req.body);
  });
  const sessionRequest = async (req, res) => {
    const transport = transports.get(req.headers['mcp-session-id']);
    if (!transport) {
      res.status(400).send('Invalid or missing session ID');
      return;
    }
    await transport.handleRequest(req, res);
  };
  app.get('/mcp', sessionRequest);
  app.delete('/mcp', sessionRequest);

  createServer({ noDelay: true }, app).listen(port, '127.0.0.1');
}

const [mode, port] = process.argv.slice(2);
if (mode === 'stdio') {
  await stdio();
} else if (mode === 'http' && port) {
  http(Number(port));
} else {
  console.error('usage: node server.mjs stdio | node server.mjs http PORT');
  process.exit(2);
}
