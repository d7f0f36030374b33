// typescript-sdk #2695: `maxTotalTimeout` is documented as a hard cap on a request "regardless of progress
// notifications", but the pinned 1.32.2 arms the request's timer with `timeout` only and reads `maxTotalTimeout` in
// one place, when a progress notification resets the timer under `resetTimeoutOnProgress`. A request that gets no
// progress is held to its `timeout`, not to the cap.
//
// `faultlab serve --transport http` (port 0, killed on every exit path); the SDK client (2025-11-25 session) calls
// the serve tool `delay` (the result after 1500 ms, no progress) with `{ timeout: 5000, maxTotalTimeout: 500 }`.
// Every POST the client sends is recorded, with its time, from the fetch it is given. A correct client gives up at
// the 500 ms cap: it POSTs notifications/cancelled for the call and rejects with -32001 (Request timeout).
// Exit 0: the wrong behaviour was seen (still present); 3: the client behaved correctly; 1: the check could not run.
import { connectRecordingPosts } from '../lib/posts.mjs';
import { COULD_NOT_RUN, FIXED, REPRODUCED, startServe } from '../lib/serve.mjs';

// In ms: the cap asked for, the per-request timeout well above it, and how long the tool takes (between the two, so
// only the cap can end the call before its result).
const CAP_MS = 500;
const TIMEOUT_MS = 5000;
const DELAY_MS = 1500;
const { url, finish } = await startServe();

let started = 0;
const posts = []; // { method, id, requestId, at } of each JSON-RPC message the client POSTed
const client = await connectRecordingPosts(url, 'known-bug-2695', finish, (message) => {
  posts.push({ method: message.method, id: message.id, requestId: message.params?.requestId, at: Date.now() - started });
});
started = Date.now();
const outcome = await client
  .callTool({ name: 'delay', arguments: { delayMs: DELAY_MS } }, undefined, {
    timeout: TIMEOUT_MS,
    maxTotalTimeout: CAP_MS,
  })
  .then(
    (result) => ({ answered: true, text: result.content?.[0]?.text ?? '', at: Date.now() - started }),
    (e) => ({ answered: false, code: e.code, message: e.message, at: Date.now() - started }),
  );
const call = posts.find((p) => p.method === 'tools/call');
if (!call) {
  finish(COULD_NOT_RUN, `could not tell: the client POSTed no tools/call (outcome ${JSON.stringify(outcome)})`);
}
const cancel = posts.find((p) => p.method === 'notifications/cancelled' && p.requestId === call.id);
if (outcome.answered && !cancel && outcome.at >= DELAY_MS) {
  finish(REPRODUCED, `reproduced: with maxTotalTimeout ${CAP_MS} ms no notifications/cancelled was POSTed and the call returned the tool's result after ${(outcome.at / 1000).toFixed(1)} s (${outcome.text})`);
}
if (!outcome.answered && outcome.code === -32001 && cancel && cancel.at < DELAY_MS) {
  finish(FIXED, `behaved correctly: the client POSTed notifications/cancelled after ${cancel.at} ms and the call failed at its ${CAP_MS} ms cap (${outcome.message})`);
}
finish(COULD_NOT_RUN, `could not decide: outcome ${JSON.stringify(outcome)}, POSTs ${JSON.stringify(posts)}`);
