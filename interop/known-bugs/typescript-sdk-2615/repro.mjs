// typescript-sdk #2615: a request whose POST stream was cut after its priming event times out (the client rejects it
// and POSTs notifications/cancelled), yet the transport still resumes that stream with GET + Last-Event-ID: the
// reconnect it scheduled belongs to the transport and nothing cancels it when the request settles.
//
// `faultlab serve --transport http` (port 0, killed on every exit path); the SDK client, in a 2025-11-25 session,
// calls the serve tool stream_cut twice. The control (retryMs 300, deadline 5 s): the POST stream sends its priming
// event (id N-0, retry: 300) and closes; the client resumes it with Last-Event-ID N-0 and gets the result. The check
// (retryMs 2000, deadline 500 ms): the same cut, but the call times out at 0.5 s, before the 2 s retry: comes due. A
// correct client drops the request's stream when the request is settled: no GET carries the check's stream id after
// notifications/cancelled. Every request the client sends is recorded from the fetch it is given (method, the
// JSON-RPC method POSTed, the Last-Event-ID of a GET), and every error the client reports.
// Exit 0: the wrong behaviour was seen (still present); 3: the client behaved correctly; 1: the check could not run.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { COULD_NOT_RUN, FIXED, REPRODUCED, startServe } from '../lib/serve.mjs';

const CONTROL = { retryMs: 300, deadlineMs: 5000 };
const CHECK = { retryMs: 2000, deadlineMs: 500 };
// How long the GETs are watched after the check's call timed out: past its 2 s retry: with a margin.
const WATCH_MS = 4000;

const { url, finish } = await startServe();

// Every request the client sends, in order: { method, rpc, lastEventId }.
const sent = [];
const recordingFetch = (input, init) => {
  const method = init?.method ?? 'GET';
  let rpc = null;
  if (method === 'POST' && typeof init.body === 'string') {
    try {
      const message = JSON.parse(init.body);
      rpc = message.method ?? 'response';
    } catch {
      // not JSON
    }
  }
  sent.push({ method, rpc, lastEventId: method === 'GET' ? new Headers(init?.headers).get('last-event-id') : null });
  return fetch(input, init);
};
const errors = [];
const client = new Client({ name: 'known-bug-2615', version: '1' });
client.onerror = (e) => errors.push(e.message);
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: recordingFetch }), { timeout: 5000 });
} catch (e) {
  finish(COULD_NOT_RUN, `could not run: connect failed: ${e.message}`);
}

// cut RETRY DEADLINE: { outcome, tokens }: `tokens`, the stream ids reported for the call before it settled.
async function cut({ retryMs, deadlineMs }) {
  const tokens = [];
  const outcome = await client
    .callTool({ name: 'stream_cut', arguments: { retryMs } }, undefined, {
      timeout: deadlineMs,
      onresumptiontoken: (token) => tokens.push(token),
    })
    .then(
      (r) => (r.isError ? 'answered with a tool error' : 'answered'),
      (e) => `failed (${e.message})`,
    );
  return { outcome, tokens: [...tokens] };
}

const control = await cut(CONTROL);
const controlGets = sent.filter((r) => r.method === 'GET' && control.tokens.includes(r.lastEventId)).length;
const check = await cut(CHECK);
const settledAt = sent.length;
await new Promise((resolve) => setTimeout(resolve, WATCH_MS));

const after = sent.slice(settledAt);
const cancelled = sent.some((r) => r.rpc === 'notifications/cancelled');
const resumes = after.filter((r) => r.method === 'GET' && check.tokens.includes(r.lastEventId));
const unknown = errors.filter((m) => /unknown message ID/i.test(m));
const seen =
  `control (retry ${CONTROL.retryMs} ms): ${control.outcome}, stream ids ${JSON.stringify(control.tokens)}, ` +
  `${controlGets} GET(s) resuming it; check (retry ${CHECK.retryMs} ms, deadline ${CHECK.deadlineMs} ms): ` +
  `${check.outcome}, stream ids ${JSON.stringify(check.tokens)}; notifications/cancelled sent: ${cancelled}; ` +
  `requests after it settled: ${JSON.stringify(after.map((r) => (r.method === 'GET' ? `GET ${r.lastEventId}` : `POST ${r.rpc}`)))}; ` +
  `client errors: ${JSON.stringify(errors)}`;
if (control.outcome !== 'answered' || controlGets === 0) {
  finish(COULD_NOT_RUN, `could not tell: the control call was not answered through a resume (${seen})`);
}
if (!check.outcome.includes('timed out') || check.tokens.length === 0 || !cancelled) {
  finish(COULD_NOT_RUN, `could not tell: the check's call did not time out after its stream primed (${seen})`);
}
if (resumes.length > 0) {
  finish(
    REPRODUCED,
    `reproduced: the call timed out and was cancelled, yet the client then sent ${resumes.length} GET(s) with ` +
      `Last-Event-ID ${resumes[0].lastEventId} to resume its stream` +
      (unknown.length > 0 ? ` and reported the replayed reply as "${unknown[0]}"` : '') +
      ` (${seen})`,
  );
}
finish(FIXED, `behaved correctly: no GET resumed the stream of the call that timed out (${seen})`);
