// typescript-sdk #2769: an explicit empty `id:` line does not clear the client's last event id, so the stale id
// is sent again as Last-Event-ID on the next reconnect.
//
// `faultlab serve --transport http` (port 0, killed on every exit path); the SDK client calls the serve tool
// `empty_event_id` (retry: 100 ms, with a progress token) in a 2025-11-25 session: the POST stream sends its
// priming event (id N-0), one progress notification with an explicit empty `id:` line, and is cut before the
// result. Per the SSE processing model the empty id resets the last event id to "", so a correct client sends
// no Last-Event-ID N-0 afterwards. Every GET the client sends is recorded from the fetch it is given.
// Exit 0: the wrong behaviour was seen (still present); 3: the client behaved correctly; 1: the check could not run.
import { connectRecordingResumes } from '../lib/resume.mjs';
import { COULD_NOT_RUN, FIXED, REPRODUCED, startServe } from '../lib/serve.mjs';

// The call's bound: a hang is detected by it, not waited out. Above 3 s because the client takes its reconnect
// delay from the last retry: it read on any stream, and the standalone GET stream (rmcp's) says 3000 ms.
const DEADLINE_MS = 8000;
const { url, finish } = await startServe();

const tokens = []; // what the transport reported as resumption tokens
const { client, gets } = await connectRecordingResumes(url, 'known-bug-2769', finish);
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
  finish(COULD_NOT_RUN, `could not tell: no priming id was reported (${seen})`);
}
if (gets.includes(primed)) {
  finish(REPRODUCED, `reproduced: after an explicit empty id: the client resumed with the stale Last-Event-ID ${primed} (${seen})`);
}
finish(FIXED, `behaved correctly: the empty id: cleared the last event id; no GET carried ${primed} (${seen})`);
