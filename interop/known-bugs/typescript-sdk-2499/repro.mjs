// typescript-sdk #2499: a resumed stream that closes again before any id-bearing event is reconnected WITHOUT
// Last-Event-ID, so the request's result is never replayed and the call hangs.
//
// `faultlab serve --transport http` (port 0, killed on every exit path); the SDK client calls the serve tool
// `stream_cut_again` (retry: 100 ms) in a 2025-11-25 session: the POST stream is cut after its priming event
// (id N-0), the first GET resuming it (Last-Event-ID: N-0) gets 200 text/event-stream and is closed before any
// event. A correct client resumes again with Last-Event-ID: N-0 and gets the result. Every GET the client sends
// is recorded from the fetch it is given (the headers as sent).
// Exit 0: the wrong behaviour was seen (still present); 3: the client behaved correctly; 1: the check could not run.
import { connectRecordingResumes } from '../lib/resume.mjs';
import { COULD_NOT_RUN, FIXED, REPRODUCED, startServe } from '../lib/serve.mjs';

// The call's bound: a hang is detected by it, not waited out. Above 3 s because the client takes its reconnect
// delay from the last retry: it read on any stream, and the standalone GET stream (rmcp's) says 3000 ms.
const DEADLINE_MS = 8000;
const { url, finish } = await startServe();

const { client, gets } = await connectRecordingResumes(url, 'known-bug-2499', finish);
const outcome = await client
  .callTool({ name: 'stream_cut_again', arguments: { retryMs: 100 } }, undefined, { timeout: DEADLINE_MS })
  .then(() => 'answered', (e) => `failed (${e.message})`);
// The first GET (no Last-Event-ID) is the standalone stream the client opens on connect; what counts is what it
// sent after its first resume.
const resumes = gets.filter((id) => id !== null);
const afterFirstResume = resumes.length > 0 ? gets.slice(gets.indexOf(resumes[0]) + 1) : [];
const seen = `GETs sent: ${JSON.stringify(gets)}; call ${outcome}`;
if (resumes.length === 1 && afterFirstResume.includes(null) && outcome !== 'answered') {
  finish(REPRODUCED, `reproduced: after the resumed stream closed before any id, the client reconnected without Last-Event-ID and the call hung past ${DEADLINE_MS} ms (${seen})`);
}
if (resumes.length >= 2 && outcome === 'answered') {
  finish(FIXED, `behaved correctly: the client resumed again with Last-Event-ID ${resumes[1]} and got the result (${seen})`);
}
finish(COULD_NOT_RUN, `could not tell: ${seen}`);
