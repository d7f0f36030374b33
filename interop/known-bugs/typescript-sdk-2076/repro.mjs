// typescript-sdk #2076: `resetTimeoutOnProgress: true` has no effect unless an `onprogress` callback is passed too:
// the request then carries no `_meta.progressToken`, so the server has no token to send progress on, and the call
// times out at its base timeout however long the server keeps working.
//
// `faultlab serve --transport http` (port 0, killed on every exit path); the SDK client (2025-11-25 session) calls
// the serve tool `progress_stream` (a progress notification every 200 ms, 10 of them, then the result, about 2 s)
// with `{ timeout: 1000, resetTimeoutOnProgress: true }` and no `onprogress`. Every POST body the client sends is
// recorded from the fetch it is given. A correct client sends a progressToken, so the notifications reset its timer
// and the call returns the result (progress_done, sent 10).
// Exit 0: the wrong behaviour was seen (still present); 3: the client behaved correctly; 1: the check could not run.
import { connectRecordingPosts } from '../lib/posts.mjs';
import { COULD_NOT_RUN, FIXED, REPRODUCED, startServe } from '../lib/serve.mjs';

// The base timeout, in ms: half the time the tool works (10 x 200 ms), so only a reset timer lets the call finish.
const TIMEOUT_MS = 1000;
const { url, finish } = await startServe();

const calls = []; // the tools/call requests the client POSTed, as sent
const client = await connectRecordingPosts(url, 'known-bug-2076', finish, (message) => {
  if (message.method === 'tools/call') calls.push(message);
});
const outcome = await client
  .callTool({ name: 'progress_stream', arguments: { everyMs: 200, count: 10 } }, undefined, {
    timeout: TIMEOUT_MS,
    resetTimeoutOnProgress: true,
  })
  .then(
    (result) => ({ answered: true, text: result.content?.[0]?.text ?? '' }),
    (e) => ({ answered: false, code: e.code, message: e.message }),
  );
const [call] = calls;
if (!call) {
  finish(COULD_NOT_RUN, `could not tell: the client POSTed no tools/call (outcome ${JSON.stringify(outcome)})`);
}
const token = call.params?._meta?.progressToken;
if (token === undefined && !outcome.answered && outcome.code === -32001) {
  finish(REPRODUCED, `reproduced: the tools/call sent with resetTimeoutOnProgress carried no _meta.progressToken, so no progress could come and the call timed out at its ${TIMEOUT_MS} ms base timeout (${outcome.message})`);
}
if (token !== undefined && outcome.answered && outcome.text.includes('"sent":10')) {
  finish(FIXED, `behaved correctly: the tools/call carried progressToken ${JSON.stringify(token)} and the call outlived its base timeout on progress (${outcome.text})`);
}
finish(COULD_NOT_RUN, `could not decide: progressToken ${JSON.stringify(token)}, outcome ${JSON.stringify(outcome)}`);
