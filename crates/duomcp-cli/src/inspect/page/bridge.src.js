// The MCP Apps host bridge of `duomcp inspect`'s page: the App SDK's AppBridge and its
// postMessage transport, nothing else, exposed as `window.DuomcpAppBridge` for app.js.
// Bundled by interop/build-apps.mjs (esbuild, pinned in interop/package-lock.json) into
// bridge.js, which is checked in and compiled into the binary; tests/inspect_fixtures/inspect.rs
// checks that rebuilding gives the same bytes.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

window.DuomcpAppBridge = { AppBridge, PostMessageTransport };
