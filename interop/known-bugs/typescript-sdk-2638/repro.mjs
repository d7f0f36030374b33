// typescript-sdk PR #2638 (v1.x): a POST's SSE stream that ends with a JSON-RPC error response is not seen as
// answered, so the client resumes it (GET with Last-Event-ID) although the request is complete.
//
// `faultlab serve --transport http` (port 0, killed on every exit path); the SDK client, in a 2025-11-25 session,
// calls the serve tool ping (the control: its stream ends with a result) and then a tool the server does not have:
// that POST's stream sends its priming event (id N-0, retry: 3000), the error response (id N-1, -32602 "tool not
// found") and closes. A request with a response is complete whether the response is a result or an error, so a
// correct client sends no GET carrying either stream's ids. Every GET the client sends is recorded from the fetch
// it is given, for WATCH_MS after the error (past the 3 s retry: the server asked for).
// Exit 0: the wrong behaviour was seen (still present); 3: the client behaved correctly; 1: the check could not run.
import { connectRecordingResumes } from '../lib/resume.mjs';
import { COULD_NOT_RUN, FIXED, REPRODUCED, startServe } from '../lib/serve.mjs';

const CALL_TIMEOUT_MS = 5000;
// How long the GETs are watched after the error: the server's retry: is 3000 ms, so a resume comes at about 3 s.
const WATCH_MS = 7000;
const { url, finish } = await startServe();

const { client, gets } = await connectRecordingResumes(url, 'known-bug-2638', finish);

// call NAME: { outcome, tokens, reported }: `tokens`, the resumption tokens (event ids) reported for the call until
// it settled (its POST stream's); `reported`, every token reported for it, kept growing if a stream resumes it.
async function call(name) {
  const reported = [];
  const outcome = await client
    .callTool({ name, arguments: {} }, undefined, {
      timeout: CALL_TIMEOUT_MS,
      onresumptiontoken: (token) => reported.push(token),
    })
    .then(
      (r) => (r.isError ? 'answered with a tool error' : 'answered'),
      (e) => `failed (${e.message})`,
    );
  const tokens = [...reported];
  return { outcome, tokens, reported };
}

const control = await call('ping');
const errored = await call('no_such_tool');
await new Promise((resolve) => setTimeout(resolve, WATCH_MS));

const seen =
  `ping: ${control.outcome}, stream ids ${JSON.stringify(control.tokens)}; ` +
  `no_such_tool: ${errored.outcome}, stream ids ${JSON.stringify(errored.tokens)}, ` +
  `ids reported for it after it failed ${JSON.stringify(errored.reported.slice(errored.tokens.length))}; ` +
  `GETs sent (Last-Event-ID): ${JSON.stringify(gets)}`;
if (control.outcome !== 'answered' || !errored.outcome.startsWith('failed') || errored.tokens.length < 2) {
  finish(COULD_NOT_RUN, `could not tell: the calls did not go as the scenario needs (${seen})`);
}
if (gets.some((id) => control.tokens.includes(id))) {
  finish(COULD_NOT_RUN, `could not tell: the client resumed the ping's stream too, which ended with a result (${seen})`);
}
const resumes = gets.filter((id) => errored.tokens.includes(id));
if (resumes.length > 0) {
  finish(
    REPRODUCED,
    `reproduced: the call's stream ended with its error response and the client resumed it anyway: ` +
      `${resumes.length} GET(s) with Last-Event-ID ${resumes[0]} within ${WATCH_MS / 1000} s (${seen})`,
  );
}
finish(FIXED, `behaved correctly: no GET resumed the stream that ended with the error response (${seen})`);
