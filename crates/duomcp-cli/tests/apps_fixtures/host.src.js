// A minimal web host for MCP Apps, built on the App SDK's host bridge: connects to the MCP
// server (same origin, /mcp, proxied by browser.mjs) declaring that it renders views, keeps
// app-only tools from "the model", calls the first tool with a view, renders the view through
// a sandbox proxy on another origin, and forwards the view's tool calls to the server.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  AppBridge,
  PostMessageTransport,
  RESOURCE_MIME_TYPE,
  getToolUiResourceUri,
  isToolVisibilityAppOnly,
} from "@modelcontextprotocol/ext-apps/app-bridge";

const INFO = { name: "duomcp-test-host", version: "1.0.0" };
const params = new URLSearchParams(location.search);
const status = (s) => {
  document.getElementById("status").textContent = s;
  console.log("[host]", s);
};

async function main() {
  const client = new Client(INFO, {
    capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: [RESOURCE_MIME_TYPE] } } },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.href)));
  const { tools } = await client.listTools();
  const modelTools = tools.filter((t) => !isToolVisibilityAppOnly(t));
  document.getElementById("model-tools").textContent = modelTools.map((t) => t.name).join(", ");
  const tool = modelTools.find((t) => getToolUiResourceUri(t));
  if (!tool) throw new Error("no tool with a view");
  const uri = getToolUiResourceUri(tool);
  const read = await client.readResource({ uri });
  const contents = read.contents.find((c) => c.mimeType === RESOURCE_MIME_TYPE);
  if (!contents) throw new Error(`${uri} has no ${RESOURCE_MIME_TYPE} contents`);
  const html = "blob" in contents ? atob(contents.blob) : contents.text;
  const ui = contents._meta?.ui ?? {};
  window.__viewMeta = ui;

  const iframe = document.createElement("iframe");
  iframe.id = "sandbox";
  iframe.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
  if (ui.prefersBorder === false) iframe.style.border = "0";
  const proxyReady = new Promise((resolve) => {
    const onReady = ({ source, data }) => {
      if (source === iframe.contentWindow && data?.method === "ui/notifications/sandbox-proxy-ready") {
        window.removeEventListener("message", onReady);
        resolve();
      }
    };
    window.addEventListener("message", onReady);
  });
  iframe.src = params.get("sandbox");
  document.getElementById("views").append(iframe);
  await proxyReady;

  const caps = client.getServerCapabilities();
  const bridge = new AppBridge(client, INFO, {
    serverTools: caps?.tools,
    serverResources: caps?.resources,
    logging: {},
  });
  bridge.onloggingmessage = (p) => console.log("[view]", JSON.stringify(p));
  const initialized = new Promise((resolve) => (bridge.oninitialized = resolve));
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  await bridge.sendSandboxResourceReady({ html, csp: ui.csp, permissions: ui.permissions });
  await initialized;
  status("view initialized");
  const args = {};
  await bridge.sendToolInput({ arguments: args });
  const result = await client.callTool({ name: tool.name, arguments: args });
  await bridge.sendToolResult(result);
  status("tool result sent");
}

main().catch((e) => {
  status(`error: ${e?.stack ?? e}`);
});
