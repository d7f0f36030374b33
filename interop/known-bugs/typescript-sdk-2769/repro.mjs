// typescript-sdk #2769: an explicit empty `id:` line does not clear the client's last event id, so the stale id
// is sent again as Last-Event-ID on the next reconnect.
//
// `faultlab serve --transport http` (port 0, killed on every exit path); the SDK client calls the serve tool
// `empty_event_id` (retry: 100 ms, with a progress token) in a 2025-11-25 session: the POST stream sends its
// priming event (id N-0), one progress notification with an explicit empty `id:` line, and is cut before the
// result. Per the SSE processing model the empty id resets the last event id to "", so a correct client sends
// no Last-Event-ID N-0 afterwards. Every GET the client sends is recorded from the fetch it is given.
// Exit 0: the wrong behaviour was seen (still present); 3: the client behaved correctly; 1: the check could not run.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

// The call's bound: a hang is detected by it, not waited out. Above 3 s because the client takes its reconnect
// delay from the last retry: it read on any stream, and the standalone GET stream (rmcp's) says 3000 ms.
const DEADLINE_MS = 8000;
const BIN = process.env.FAULTLAB_BIN;
if (!BIN) {
  console.log('could not run: FAULTLAB_BIN is not set');
  process.exit(1);
}

const server = spawn(BIN, ['serve', '--transport', 'http', '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
const lifetime = setTimeout(() => finish(1, 'could not run: the check passed its 20 s lifetime'), 20000);
function finish(code, line) {
  clearTimeout(lifetime);
  console.log(line);
  server.kill('SIGKILL');
  process.exit(code);
}
server.on('error', (e) => finish(1, `could not run: ${BIN}: ${e.message}`));

const url = await new Promise((resolve) => {
  const lines = createInterface({ input: server.stderr });
  lines.on('line', (line) => {
    const m = line.match(/^faultlab: listening at (\S+)/);
    if (m) resolve(m[1]);
  });
  server.on('exit', () => finish(1, 'could not run: faultlab serve exited before listening'));
});

const gets = []; // the Last-Event-ID of every GET the client sent (null: none)
const recordingFetch = (input, init) => {
  if (init?.method === 'GET') {
    gets.push(new Headers(init.headers).get('last-event-id'));
  }
  return fetch(input, init);
};
const tokens = []; // what the transport reported as resumption tokens
const transport = new StreamableHTTPClientTransport(new URL(url), {
  fetch: recordingFetch,
  reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 100, reconnectionDelayGrowFactor: 1, maxRetries: 5 },
});
const client = new Client({ name: 'known-bug-2769', version: '1' });
try {
  await client.connect(transport);
} catch (e) {
  finish(1, `could not run: connect failed: ${e.message}`);
}
const outcome = await client
  .callTool({ name: 'empty_event_id', arguments: { retryMs: 100 } }, undefined, {
    timeout: DEADLINE_MS,
    onprogress: () => {},
    onresumptiontoken: (token) => tokens.push(token),
  })
  .then(() => 'answered', (e) => `failed (${e.message})`);
const primed = tokens.find((t) => /^\d+-0$/.test(t));
const seen = `resumption tokens: ${JSON.stringify(tokens)}; GETs sent: ${JSON.stringify(gets)}; call ${outcome}`;
if (!primed) {
  finish(1, `could not tell: no priming id was reported (${seen})`);
}
if (gets.includes(primed)) {
  finish(0, `reproduced: after an explicit empty id: the client resumed with the stale Last-Event-ID ${primed} (${seen})`);
}
finish(3, `behaved correctly: the empty id: cleared the last event id; no GET carried ${primed} (${seen})`);
