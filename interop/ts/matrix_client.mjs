#!/usr/bin/env node
// Interop matrix client: the official MCP TypeScript SDK (@modelcontextprotocol/sdk, pinned in
// scripts/lib/interop-ts.sh) against `faultlab serve`.
//
// For every case in interop/matrix-cases.json and every transport this SDK speaks (stdio and Streamable HTTP at
// 2025-11-25; SDK 1.x has no 2026-07-28 / server/discover support) it opens a fresh connection (a fresh server
// process per cell), calls the case's tool with the deadline from the cases file, then calls `ping` on the same
// connection, and prints one raw JSON record per cell on stdout (the same shape as interop/python/matrix_client.py):
//   {sdk, sdkVersion, transport, tool, args, outcome, errorType, errorCode, message, text, elapsedMs, nextCallOk}
//
// scripts/interop-matrix.sh copies this file next to the installed SDK in .cache/node and runs it there.
//   node matrix_client.mjs --bin FAULTLAB --cases interop/matrix-cases.json [--transport T]... [--server-log FILE]
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, ErrorCode, ListRootsRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";

// The SDK's package.json is not in its exports map: read it from the node_modules this file runs beside.
const SDK_VERSION = JSON.parse(readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json",
  import.meta.url), "utf8")).version;
const SUPPORTED = ["stdio", "http-2025-11-25"];
const GRACE_MS = 2500;

function parseArgs(argv) {
  const out = { transports: [] };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = argv[++i];
    if (k === "--bin") out.bin = v;
    else if (k === "--cases") out.cases = v;
    else if (k === "--transport") out.transports.push(v);
    else if (k === "--server-log") out.serverLog = v;
    else if (k === "--cell") out.cell = Number(v);
    else throw new Error(`unknown argument ${k}`);
  }
  if (!out.bin || !out.cases) throw new Error("--bin and --cases are required");
  if (out.transports.length === 0) out.transports = SUPPORTED;
  return out;
}

function textOf(result) {
  return (result?.content ?? []).map((c) => c.text ?? "").join("").slice(0, 300);
}

function classify(err) {
  const out = { errorType: err?.constructor?.name ?? typeof err, message: String(err?.message ?? err).slice(0, 200) };
  if (err instanceof McpError) {
    out.errorCode = err.code;
    if (err.code === ErrorCode.RequestTimeout) out.outcome = "timeout";
    else if (err.code === ErrorCode.ConnectionClosed) out.outcome = "transport_loss";
    else out.outcome = "error";
  } else if (/fetch failed|ECONNRESET|socket|terminated|other side closed|closed/i.test(out.message)) {
    out.outcome = "transport_loss";
  } else {
    out.outcome = "error";
  }
  return out;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** `BIN serve --transport http --port 0`; resolves with {child, url}. */
function httpServer(bin, log) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ["serve", "--transport", "http", "--port", "0"], { stdio: ["ignore", "ignore", "pipe"] });
    let buf = "";
    let found = false;
    const timer = setTimeout(() => { child.kill("SIGKILL"); reject(new Error("no 'listening at' within 15 s")); }, 15000);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      if (log) log.push(chunk);
      if (found) return;
      buf += chunk;
      // Only a complete line counts: a chunk may end in the middle of the URL.
      const m = /listening at (http:\/\/\S+)\r?\n/.exec(buf);
      if (m) { found = true; clearTimeout(timer); resolve({ child, url: m[1] }); }
    });
    child.on("exit", (code) => { if (!found) { clearTimeout(timer); reject(new Error(`server exited ${code}`)); } });
  });
}

async function runCell(rec, transportName, bin, deadlineMs) {
  let server = null;
  let transport;
  // The ask_client cells' client declares elicitation (form and URL mode) and roots, not sampling (so an undeclared
  // sampling request shows how the SDK refuses what it did not declare), accepts every form with confirm: true and
  // every URL (no content: URL mode's accept carries none) and lists one root; every other cell's client declares nothing, as before ask_client had rows.
  const asks = rec.tool === "ask_client";
  // The task_lifecycle cells' client (task_work with a fault) declares the tasks extension, as a client that wants
  // task handles does; it still calls through callTool (this SDK's task support, experimental.tasks, is 2025-11-25's
  // `params.task` shape, which this extension does not use), so the cell shows what the SDK makes of the handle.
  const tasks = rec.tool === "task_work" && rec.args.fault !== undefined;
  const capabilities = asks ? { elicitation: { form: {}, url: {} }, roots: {} }
    : tasks ? { extensions: { "io.modelcontextprotocol/tasks": {} } } : undefined;
  const client = new Client({ name: "faultlab-interop-matrix", version: "1" },
    capabilities ? { capabilities } : undefined);
  if (asks) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => request.params.mode === "url"
      ? { action: "accept" } : { action: "accept", content: { confirm: true } });
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: "file:///tmp/faultlab-matrix" }] }));
  }
  client.onerror = () => {}; // transport-level errors are observed through the calls
  if (transportName === "stdio") {
    transport = new StdioClientTransport({ command: bin, args: ["serve"], stderr: "ignore" });
  } else {
    server = await httpServer(bin, null);
    transport = new StreamableHTTPClientTransport(new URL(server.url));
  }
  let phase = "connect";
  const started = Date.now();
  const work = (async () => {
    await client.connect(transport, { timeout: deadlineMs });
    phase = "call";
    const t0 = Date.now();
    try {
      const result = await client.callTool({ name: rec.tool, arguments: rec.args }, undefined, { timeout: deadlineMs });
      rec.elapsedMs = Date.now() - t0;
      rec.outcome = result.isError ? "tool_error" : "result";
      rec.text = textOf(result);
    } catch (err) {
      rec.elapsedMs = Date.now() - t0;
      Object.assign(rec, classify(err));
    }
    phase = "next";
    try {
      const next = await client.callTool({ name: "ping", arguments: {} }, undefined, { timeout: deadlineMs });
      rec.nextCallOk = !next.isError && textOf(next).includes('"ok"');
    } catch (err) {
      rec.nextCallOk = false;
      rec.nextDetail = classify(err).errorType;
    }
    phase = "close";
  })();
  const bound = 2 * deadlineMs + GRACE_MS + 3000;
  const outcome = await Promise.race([work.then(() => "done", (e) => e), sleep(bound).then(() => "bound")]);
  if (outcome === "bound") {
    if (phase === "call") {
      Object.assign(rec, { outcome: "hang", elapsedMs: Date.now() - started, errorType: "HarnessDeadline",
        message: `no answer within ${bound / 1000} s`, nextCallOk: null });
    } else if (phase === "next") {
      rec.nextCallOk = false;
      rec.nextDetail = "HarnessDeadline";
    } else if (phase === "connect") {
      Object.assign(rec, { outcome: "error", errorType: "ConnectTimeout", message: "connect did not finish",
        elapsedMs: 0, nextCallOk: null });
    }
  } else if (outcome !== "done") {
    const info = classify(outcome);
    if (phase === "connect") {
      Object.assign(rec, info, { outcome: "error", elapsedMs: 0, nextCallOk: null,
        message: `connect failed: ${info.message}` });
    }
  }
  await Promise.race([client.close().catch(() => {}), sleep(3000)]);
  if (server) {
    server.child.kill("SIGKILL");
  }
}

// Each cell runs in its own Node process (`--cell N` with one --transport): fetch's global keep-alive pool would
// otherwise hand a later cell a socket to an earlier, killed server whose port the OS has given out again.
async function main() {
  const args = parseArgs(process.argv.slice(2));
  const spec = JSON.parse(readFileSync(args.cases, "utf8"));
  process.on("unhandledRejection", () => {});
  const bound = 2 * spec.deadlineMs + GRACE_MS + 3000;
  for (const transportName of args.transports) {
    if (!SUPPORTED.includes(transportName)) throw new Error(`this SDK does not speak ${transportName}`);
    for (const [index, c] of spec.cases.entries()) {
      if (args.cell !== undefined && index !== args.cell) continue;
      if (!(c.transports ?? spec.transports).includes(transportName)) continue;
      const rec = { sdk: "typescript", sdkVersion: `@modelcontextprotocol/sdk ${SDK_VERSION}`,
        transport: transportName, tool: c.tool, args: c.args };
      if (args.cell === undefined) {
        const child = spawnSync(process.execPath, [process.argv[1], "--bin", args.bin, "--cases", args.cases,
          "--transport", transportName, "--cell", String(index)],
          { encoding: "utf8", timeout: bound + 8000, killSignal: "SIGKILL", stdio: ["ignore", "pipe", "inherit"] });
        const line = (child.stdout ?? "").trim().split("\n").pop();
        try {
          Object.assign(rec, JSON.parse(line));
        } catch {
          Object.assign(rec, { outcome: "hang", errorType: "HarnessDeadline", nextCallOk: null,
            message: `cell process ended without a record (status ${child.status}, signal ${child.signal})` });
        }
        process.stdout.write(`${JSON.stringify(rec)}\n`);
        continue;
      }
      try {
        await runCell(rec, transportName, args.bin, spec.deadlineMs);
      } catch (err) {
        Object.assign(rec, { outcome: "error", errorType: "HarnessError", message: String(err?.message ?? err),
          nextCallOk: null });
      }
      process.stdout.write(`${JSON.stringify(rec)}\n`);
    }
  }
  process.exit(0);
}

main().catch((err) => { console.error(err); process.exit(2); });
