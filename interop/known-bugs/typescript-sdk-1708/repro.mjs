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
import { spawn } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const DEADLINE_MS = 3000;

function startServer(bin) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ["serve", "--transport", "http", "--port", "0"], { stdio: ["ignore", "ignore", "pipe"] });
    let buf = "";
    const timer = setTimeout(() => { child.kill("SIGKILL"); reject(new Error("no 'listening at' within 15 s")); }, 15000);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      buf += chunk;
      const m = /listening at (http:\/\/\S+)\r?\n/.exec(buf);
      if (m) { clearTimeout(timer); buf = ""; resolve({ child, url: m[1] }); }
    });
    child.on("exit", (code) => { clearTimeout(timer); reject(new Error(`faultlab serve exited ${code}`)); });
  });
}

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

async function main() {
  const bin = process.env.FAULTLAB_BIN;
  if (!bin) { console.log("could not run: FAULTLAB_BIN is not set"); return 2; }
  const { child, url } = await startServer(bin);
  const bound = setTimeout(() => { console.log("could not run: the check passed its 20 s bound"); child.kill("SIGKILL"); process.exit(2); }, 20000);
  try {
    const { posts, calls } = await observe(url);
    const inits = posts.filter((p) => p.method === "initialize");
    const first404 = posts.findIndex((p) => p.status === 404);
    const stale = first404 < 0 ? [] : posts.slice(first404).filter((p) => p.status === 404 && p.session === posts[first404].session);
    if (inits.length === 1 && stale.length >= 2 && !calls.includes("ok")) {
      console.log(`after the 404 no new initialize was sent; ${stale.length} POSTs carried the dead session id and got 404; calls: ${JSON.stringify(calls)}`);
      return 0;
    }
    if (inits.length >= 2 && calls.at(-1) === "ok") {
      console.log(`the client sent a new initialize after the 404 and the call succeeded; calls: ${JSON.stringify(calls)}`);
      return 3;
    }
    console.log(`could not decide: initializes ${inits.length}, POSTs ${JSON.stringify(posts)}, calls ${JSON.stringify(calls)}`);
    return 2;
  } catch (err) {
    console.log(`could not run: ${String(err?.message ?? err)}`);
    return 2;
  } finally {
    clearTimeout(bound);
    child.kill("SIGKILL");
  }
}

process.exitCode = await main();
