// The cell protocol of the framework matrix for a TypeScript framework (interop/frameworks/node_framework.py runs
// the drivers beside this file, fw_*.mjs, one Node process per cell):
//
//   node fw_x.mjs --meta          prints {"name", "package", "api", "default_deadline"}
//   node fw_x.mjs CELL.json       CELL: {"model_url", "server", "prompt"}, server as matrix.py gives it
//                                 ({"transport": "stdio", "command": [...]} or {"transport": "http", "url"});
//                                 prints {"output": TEXT} when the agent's run ended with an answer, or
//                                 {"error": "Name: message"} when it raised
//
// which is what a Python fw_*.py's run() returns or raises. The process exits once the line is written: a
// framework that keeps a handle open (a half-closed MCP session, a timer) must not keep the cell waiting.
import { readFileSync, writeSync } from "node:fs";

function describe(error) {
  // An aggregate names its first cause, as matrix.py names an exception group's innermost exception.
  while (error instanceof AggregateError && error.errors?.length) {
    error = error.errors[0];
  }
  if (error instanceof Error) {
    return `${error.name || error.constructor?.name || "Error"}: ${error.message}`;
  }
  return `thrown: ${typeof error === "string" ? error : JSON.stringify(error)}`;
}

function emit(record, status) {
  writeSync(1, JSON.stringify(record) + "\n");
  process.exit(status);
}

// runCell(meta, run): meta as above; run(modelUrl, server, prompt) resolves to the run's final text.
export async function runCell(meta, run) {
  const arg = process.argv[2];
  if (arg === "--meta") {
    emit(meta, 0);
  }
  if (!arg) {
    writeSync(2, "usage: node fw_x.mjs --meta | CELL.json\n");
    process.exit(2);
  }
  // Telemetry stays off; nothing in a cell leaves the machine.
  process.env.MASTRA_TELEMETRY_DISABLED = "1";
  process.env.OPENAI_AGENTS_DISABLE_TRACING = "1";
  const cell = JSON.parse(readFileSync(arg, "utf8"));
  // An application's server or timers keep its process alive while an agent run waits: here nothing else does,
  // and Node would exit (status 13, "unsettled top-level await") when a framework leaves the run's promise
  // pending with no handle open. That run never ends in an application: the matrix must see it wait (hung).
  setInterval(() => {}, 1 << 30);
  // A rejection nobody awaited (a transport's background reader failing) is part of the run's end, not a reason
  // for Node to exit before the answer is written: the first one is reported as the run's error unless the run
  // has answered by then.
  process.on("unhandledRejection", (error) => emit({ error: describe(error), unhandled: true }, 1));
  try {
    const output = await run(cell.model_url, cell.server, cell.prompt);
    emit({ output: String(output ?? "") }, 0);
  } catch (error) {
    emit({ error: describe(error) }, 1);
  }
}
