#!/usr/bin/env node
// typescript-sdk #2344 (RFC 8414 §3.3 issuer validation): against `faultlab serve --auth --auth-fault issuer_mismatch`,
// does the pinned SDK's OAuth client register and authorize with metadata that names another issuer?
// Exit 0: it did (the bug is still there); 3: it refused the metadata (fixed); 1: the check could not run.
// FAULTLAB_BIN is the faultlab to use; the SDK is the pinned one of scripts/lib/interop-ts.sh (.cache/node).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { headlessProvider } from "../lib/oauth.mjs";
import { COULD_NOT_RUN, FIXED, REPRODUCED, startServe } from "../lib/serve.mjs";

const DEADLINE_MS = 3000;

async function main() {
  const events = [];
  const { url, finish } = await startServe(["--auth", "--auth-fault", "issuer_mismatch"], {
    onEvent: (e) => { if (e.auth) events.push(e.auth); },
  });
  let authorized = false;
  const provider = headlessProvider(() => { authorized = true; });

  let timer;
  const deadline = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error("deadline")), DEADLINE_MS); });
  let error;
  try {
    const client = new Client({ name: "faultlab-repro", version: "1" });
    await Promise.race([client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider })), deadline]);
  } catch (e) {
    error = e;
  } finally {
    clearTimeout(timer);
  }
  const used = authorized || events.includes("client_registered") || events.includes("authorization_started");
  if (used) {
    finish(REPRODUCED, `reproduced: the client used metadata naming another issuer (events: ${events.join(", ")})`);
  }
  if (error && /issuer/i.test(String(error.message)) && events.includes("metadata_served")) {
    finish(FIXED, `fixed: the client refused the mismatched issuer (${error.constructor?.name}: ${error.message})`);
  }
  finish(COULD_NOT_RUN, `could not decide: ${error ? error.message : "no error and no authorization"} (events: ${events.join(", ")})`);
}

main().catch((e) => { console.log(`could not run: ${e.message}`); process.exit(COULD_NOT_RUN); });
