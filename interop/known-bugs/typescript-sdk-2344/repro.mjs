#!/usr/bin/env node
// typescript-sdk #2344 (RFC 8414 §3.3 issuer validation): against `faultlab serve --auth --auth-fault issuer_mismatch`,
// does the pinned SDK's OAuth client register and authorize with metadata that names another issuer?
// Exit 0: it did (the bug is still there); 3: it refused the metadata (fixed); 1: the check could not run.
// FAULTLAB_BIN is the faultlab to use; the SDK is the pinned one of scripts/lib/interop-ts.sh (.cache/node).
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const DEADLINE_MS = 3000;
const REDIRECT = "http://127.0.0.1:9/callback";

function sdkDir() {
  const here = path.dirname(new URL(import.meta.url).pathname);
  const candidates = [process.env.INTEROP_TS_DIR, path.resolve(here, "../../../.cache/node"), process.cwd(), here];
  for (const dir of candidates.filter(Boolean)) {
    if (existsSync(path.join(dir, "node_modules/@modelcontextprotocol/sdk/package.json"))) return dir;
  }
  throw new Error("the pinned TypeScript SDK is not installed (scripts/lib/interop-ts.sh installs it into .cache/node)");
}

async function main() {
  const bin = process.env.FAULTLAB_BIN;
  if (!bin) throw new Error("FAULTLAB_BIN is not set");
  const esm = path.join(sdkDir(), "node_modules/@modelcontextprotocol/sdk/dist/esm");
  const { Client } = await import(pathToFileURL(path.join(esm, "client/index.js")));
  const { StreamableHTTPClientTransport } = await import(pathToFileURL(path.join(esm, "client/streamableHttp.js")));

  const server = spawn(bin, ["serve", "--transport", "http", "--port", "0", "--auth", "--auth-fault", "issuer_mismatch"],
    { stdio: ["ignore", "ignore", "pipe"] });
  const events = [];
  let buffer = "";
  const url = new Promise((resolve, reject) => {
    server.stderr.on("data", (chunk) => {
      buffer += chunk.toString();
      for (let i; (i = buffer.indexOf("\n")) >= 0; buffer = buffer.slice(i + 1)) {
        const line = buffer.slice(0, i);
        const listening = line.match(/^faultlab: listening at (\S+)/);
        if (listening) resolve(listening[1]);
        if (line.startsWith("{")) { try { const e = JSON.parse(line); if (e.auth) events.push(e.auth); } catch { /* not an event */ } }
      }
    });
    server.on("exit", (code) => reject(new Error(`faultlab exited (${code}) before listening`)));
  });
  let authorized = false;
  const provider = {
    get redirectUrl() { return REDIRECT; },
    get clientMetadata() {
      return { client_name: "faultlab-repro", redirect_uris: [REDIRECT], grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"], token_endpoint_auth_method: "none" };
    },
    client: undefined, stored: undefined, verifier: undefined,
    clientInformation() { return this.client; },
    saveClientInformation(info) { this.client = info; },
    tokens() { return this.stored; },
    saveTokens(tokens) { this.stored = tokens; },
    saveCodeVerifier(v) { this.verifier = v; },
    codeVerifier() { return this.verifier; },
    async redirectToAuthorization() { authorized = true; },
  };
  let timer;
  const deadline = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error("deadline")), DEADLINE_MS); });
  let error;
  try {
    const endpoint = await Promise.race([url, deadline]);
    const client = new Client({ name: "faultlab-repro", version: "1" });
    await Promise.race([client.connect(new StreamableHTTPClientTransport(new URL(endpoint), { authProvider: provider })), deadline]);
  } catch (e) {
    error = e;
  } finally {
    clearTimeout(timer);
    server.kill("SIGKILL");
  }
  const used = authorized || events.includes("client_registered") || events.includes("authorization_started");
  if (used) {
    console.log(`reproduced: the client used metadata naming another issuer (events: ${events.join(", ")})`);
    return 0;
  }
  if (error && /issuer/i.test(String(error.message)) && events.includes("metadata_served")) {
    console.log(`fixed: the client refused the mismatched issuer (${error.constructor?.name}: ${error.message})`);
    return 3;
  }
  console.log(`could not decide: ${error ? error.message : "no error and no authorization"} (events: ${events.join(", ")})`);
  return 1;
}

main().then((code) => process.exit(code), (e) => { console.log(`could not run: ${e.message}`); process.exit(1); });
