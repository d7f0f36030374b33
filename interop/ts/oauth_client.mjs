#!/usr/bin/env node
// The official MCP TypeScript SDK's OAuth client (an OAuthClientProvider on StreamableHTTPClientTransport), headless,
// against `faultlab serve --transport http --auth [--auth-fault FAULT]`.
//
// The provider registers dynamically, and its redirectToAuthorization fetches the authorization URL without following
// the redirect: faultlab approves at once, so the Location carries the code (or the error), which goes to
// transport.finishAuth as an app's redirect handler would. The client connects, then lists the tools `calls` times
// on the same connection. One JSON line on stdout:
//   {sdk, sdkVersion, fault, outcome: ok|error|timeout, error, callsOk, calls, redirects, auth: {EVENT: count}}
// where auth counts faultlab's auth events (stderr). Every wait is bounded by --deadline-ms (default 10000); the
// server is killed on every path. Exit 0 when it ran (whatever the outcome), 1 when it could not.
//   node oauth_client.mjs --bin FAULTLAB [--fault FAULT] [--calls N] [--deadline-ms MS]
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";

const SDK_VERSION = JSON.parse(readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json",
  import.meta.url), "utf8")).version;
const REDIRECT = "http://127.0.0.1:9/callback";

function parseArgs(argv) {
  const out = { calls: 3, deadlineMs: 10000 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = argv[++i];
    if (k === "--bin") out.bin = v;
    else if (k === "--fault") out.fault = v;
    else if (k === "--calls") out.calls = Number(v);
    else if (k === "--deadline-ms") out.deadlineMs = Number(v);
    else throw new Error(`unknown argument ${k}`);
  }
  if (!out.bin) throw new Error("--bin is required");
  return out;
}

class HeadlessProvider {
  constructor() {
    this.client = undefined;
    this.stored = undefined;
    this.verifier = undefined;
    this.code = undefined;
    this.error = undefined;
    this.redirects = 0;
  }
  get redirectUrl() { return REDIRECT; }
  get clientMetadata() {
    return {
      client_name: "faultlab-oauth-interop",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() { return this.client; }
  saveClientInformation(info) { this.client = info; }
  tokens() { return this.stored; }
  saveTokens(tokens) { this.stored = tokens; }
  saveCodeVerifier(verifier) { this.verifier = verifier; }
  codeVerifier() { return this.verifier; }
  // The user agent: faultlab approves at once; the redirect's Location is read, not followed.
  async redirectToAuthorization(url) {
    this.redirects += 1;
    const response = await fetch(url, { redirect: "manual" });
    const location = new URL(response.headers.get("location"));
    this.code = location.searchParams.get("code") ?? undefined;
    this.error = location.searchParams.get("error") ?? undefined;
  }
  takeCode() {
    const code = this.code;
    this.code = undefined;
    return code;
  }
}

function startServer(bin, fault) {
  const args = ["serve", "--transport", "http", "--port", "0", "--auth"];
  if (fault) args.push("--auth-fault", fault);
  const child = spawn(bin, args, { stdio: ["ignore", "ignore", "pipe"] });
  const events = {};
  let buffer = "";
  const url = new Promise((resolve, reject) => {
    child.stderr.on("data", (chunk) => {
      buffer += chunk.toString();
      let newline;
      while ((newline = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        const listening = line.match(/^faultlab: listening at (\S+)/);
        if (listening) resolve(listening[1]);
        if (line.startsWith("{")) {
          try {
            const event = JSON.parse(line);
            if (event.auth) events[event.auth] = (events[event.auth] ?? 0) + 1;
          } catch { /* not an event */ }
        }
      }
    });
    child.on("exit", (code) => reject(new Error(`faultlab exited (${code}) before listening`)));
  });
  return { child, url, events };
}

// Connects, finishing a headless authorization when the SDK asks for one (at most `rounds` times).
async function connect(url, provider, rounds = 3) {
  for (let round = 0; ; round++) {
    const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
    const client = new Client({ name: "faultlab-oauth-interop", version: "1" });
    try {
      await client.connect(transport);
      return { client, transport };
    } catch (error) {
      if (!(error instanceof UnauthorizedError) || round + 1 >= rounds) throw error;
      const code = provider.takeCode();
      if (!code) throw new Error(`authorization gave no code (${provider.error ?? "no redirect"})`);
      await transport.finishAuth(code);
    }
  }
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const server = startServer(args.bin, args.fault);
  const provider = new HeadlessProvider();
  const record = { sdk: "typescript", sdkVersion: SDK_VERSION, fault: args.fault ?? null, outcome: "ok", error: null,
    callsOk: 0, calls: args.calls };
  let timer;
  const deadline = new Promise((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`no end within ${args.deadlineMs} ms`), { timeout: true })),
      args.deadlineMs);
  });
  let session;
  try {
    await Promise.race([(async () => {
      const url = await server.url;
      session = await connect(url, provider);
      for (let i = 0; i < args.calls; i++) {
        await session.client.listTools();
        record.callsOk += 1;
      }
    })(), deadline]);
  } catch (error) {
    record.outcome = error.timeout ? "timeout" : "error";
    record.error = `${error.constructor?.name ?? "Error"}: ${error.message}`.slice(0, 300);
  } finally {
    clearTimeout(timer);
    try { await session?.client.close(); } catch { /* the server may be gone */ }
    server.child.kill("SIGKILL");
  }
  record.redirects = provider.redirects;
  record.auth = server.events;
  console.log(JSON.stringify(record));
}

main().then(() => process.exit(0), (error) => {
  console.error(`oauth_client: ${error.message}`);
  process.exit(1);
});
