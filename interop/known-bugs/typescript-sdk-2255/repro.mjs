#!/usr/bin/env node
// typescript-sdk #2255 (step-up authorization with a refresh token): against `faultlab serve --auth --auth-fault
// insufficient_scope`, does the pinned SDK's OAuth client answer `403 insufficient_scope` with a refresh grant (which
// cannot widen a grant, RFC 6749 §6) and give up, instead of authorizing again with the scope the server named?
// Exit 0: it did (the bug is still there); 3: it authorized again with the new scope and the call went through
// (fixed); 1: the check could not run or could not decide.
// FAULTLAB_BIN is the faultlab to use; the SDK is the pinned one of scripts/lib/interop-ts.sh (.cache/node).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { headlessProvider } from "../lib/oauth.mjs";
import { COULD_NOT_RUN, FIXED, REPRODUCED, startServe } from "../lib/serve.mjs";

const DEADLINE_MS = 5000;
// The first authorized request (initialize) passes; every later one needs mcp:write, which the first grant lacks.
const FAULT = JSON.stringify({ type: "insufficient_scope", after: 1, scope: "mcp:write" });

const provider = headlessProvider();

// Connects, finishing the headless authorization the SDK asks for (at most twice).
async function connect(url) {
  for (let round = 0; ; round++) {
    const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
    const client = new Client({ name: "faultlab-repro", version: "1" });
    try {
      await client.connect(transport);
      return { client, transport };
    } catch (error) {
      if (!(error instanceof UnauthorizedError) || round >= 1 || !provider.code) throw error;
      const code = provider.code;
      provider.code = undefined;
      await transport.finishAuth(code);
    }
  }
}

async function main() {
  const events = [];
  const { url, finish } = await startServe(["--auth", "--auth-fault", FAULT], {
    onEvent: (e) => { if (e.auth) events.push(e); },
  });
  let timer;
  const deadline = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error("deadline")), DEADLINE_MS); });
  let error;
  let listed = false;
  try {
    await Promise.race([(async () => {
      const { client, transport } = await connect(url);
      try {
        await client.listTools();
      } catch (e) {
        // A fixed SDK may ask the app to finish a new authorization for the wider scope, as on connect.
        if (!(e instanceof UnauthorizedError) || !provider.code) throw e;
        await transport.finishAuth(provider.code);
        await client.listTools();
      }
      listed = true;
    })(), deadline]);
  } catch (e) {
    error = e;
  } finally {
    clearTimeout(timer);
  }
  const names = (name) => events.filter((e) => e.auth === name);
  const refused = names("token_refused").filter((e) => e.reason === "insufficient_scope").length;
  const refreshed = names("token_issued").filter((e) => e.grant === "refresh_token");
  const authorizations = names("authorization_started");
  const seen = `events: ${events.map((e) => e.grant ? `${e.auth}(${e.grant}: ${e.scope})` : e.auth).join(", ")}`;
  if (error && refused > 0 && refreshed.length > 0 && authorizations.length === 1 && /403/.test(String(error.message))) {
    finish(REPRODUCED, `reproduced: the 403 insufficient_scope was answered with a refresh grant (scope ${refreshed[0].scope}), `
      + `no new authorization, then the error "${error.message}" (${seen})`);
  }
  if (listed && authorizations.length >= 2 && authorizations.slice(1).some((e) => String(e.scope).includes("mcp:write"))) {
    finish(FIXED, `fixed: the client authorized again for mcp:write and the call went through (${seen})`);
  }
  finish(COULD_NOT_RUN, `could not decide: ${error ? error.message : "the call went through"} (${seen})`);
}

main().catch((e) => { console.log(`could not run: ${e.message}`); process.exit(COULD_NOT_RUN); });
