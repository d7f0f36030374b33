#!/usr/bin/env node
// typescript-sdk #1708: StreamableHTTPClientTransport does not clear its session id or start a new session on 404.
//
// Starts `faultlab serve --transport http --port 0` (FAULTLAB_BIN), opens a 2025-11-25 session with the pinned SDK,
// calls the `session_loss` tool (`after_response`: the result arrives, then the server forgets the session, so every
// later request with that id gets 404 and JSON-RPC -32001), then calls `ping` twice. Every POST goes through a
// logging fetch: the JSON-RPC method, the `Mcp-Session-Id` it carried and the status it got.
//
// Exit 0: the bug is still there (no new `initialize` after the 404, the dead id sent again); exit 3: the client
// started a new session and a call succeeded (fixed upstream); any other code: the check could not run. Every wait
// is bounded (each call 3 s, the whole check 20 s); the server is killed on every path.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { COULD_NOT_RUN, FIXED, REPRODUCED, startServe } from "../lib/serve.mjs";

const DEADLINE_MS = 3000;

async function observe(url) {
  const posts = [];
  const loggingFetch = async (input, init) => {
    const response = await fetch(input, init);
    if ((init?.method ?? "GET") === "POST") {
      let method = null;
      try { method = JSON.parse(String(init.body)).method ?? null; } catch { /* not JSON: leave it null */ }
      const headers = new Headers(init.headers);
      posts.push({ method, session: headers.get("mcp-session-id"), status: response.status });
    }
    return response;
  };
  const client = new Client({ name: "known-bug-1708", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), { fetch: loggingFetch });
  const calls = [];
  try {
    await client.connect(transport, { timeout: DEADLINE_MS });
    await client.callTool({ name: "session_loss", arguments: { activation: "after_response" } }, undefined,
      { timeout: DEADLINE_MS });
    for (let i = 0; i < 2; i++) {
      try {
        const result = await client.callTool({ name: "ping", arguments: {} }, undefined, { timeout: DEADLINE_MS });
        calls.push(result.isError ? "tool_error" : "ok");
      } catch (err) {
        calls.push(`error: ${String(err?.message ?? err).slice(0, 80)}`);
      }
    }
  } finally {
    await Promise.race([client.close().catch(() => {}), new Promise((r) => setTimeout(r, 1000).unref())]);
  }
  return { posts, calls };
}

const { url, finish } = await startServe();
try {
  const { posts, calls } = await observe(url);
  const inits = posts.filter((p) => p.method === "initialize");
  const first404 = posts.findIndex((p) => p.status === 404);
  const stale = first404 < 0 ? [] : posts.slice(first404).filter((p) => p.status === 404 && p.session === posts[first404].session);
  if (inits.length === 1 && stale.length >= 2 && !calls.includes("ok")) {
    finish(REPRODUCED, `after the 404 no new initialize was sent; ${stale.length} POSTs carried the dead session id and got 404; calls: ${JSON.stringify(calls)}`);
  }
  if (inits.length >= 2 && calls.at(-1) === "ok") {
    finish(FIXED, `the client sent a new initialize after the 404 and the call succeeded; calls: ${JSON.stringify(calls)}`);
  }
  finish(COULD_NOT_RUN, `could not decide: initializes ${inits.length}, POSTs ${JSON.stringify(posts)}, calls ${JSON.stringify(calls)}`);
} catch (err) {
  finish(COULD_NOT_RUN, `could not run: ${String(err?.message ?? err)}`);
}
