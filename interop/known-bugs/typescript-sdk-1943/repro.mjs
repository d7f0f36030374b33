// typescript-sdk #1943: client.callTool validates structuredContent against the tool's outputSchema even when the
// result is an error (isError: true), so the caller gets a schema error instead of the tool's error.
//
// `faultlab serve --transport http` (port 0, killed on every exit path); the SDK client lists the tools (the SDK
// keeps an output-schema validator only for tools it listed), calls the serve tool `structured_output` with fault
// none (a conforming result: the validator is in use and accepts it), then with fault error_structured_content:
// the server's result becomes isError: true with structuredContent {"error": {...}}, which the tool's outputSchema
// (count, status required) rejects. An error result is not validated (it does not describe success), so a correct
// client hands the caller that error result.
// Exit 0: the wrong behaviour was seen (still present); 3: the client behaved correctly; 1: the check could not run.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { COULD_NOT_RUN, FIXED, REPRODUCED, startServe } from '../lib/serve.mjs';

// Each request's bound: a hang is detected by it, not waited out.
const DEADLINE_MS = 8000;
const { url, finish } = await startServe();

const client = new Client({ name: 'known-bug-1943', version: '1.0.0' });
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const listed = await client.listTools(undefined, { timeout: DEADLINE_MS });
  const tool = listed.tools.find((t) => t.name === 'structured_output');
  if (!tool?.outputSchema) {
    finish(COULD_NOT_RUN, 'could not tell: structured_output is not listed with an outputSchema');
  }
} catch (e) {
  finish(COULD_NOT_RUN, `could not run: connecting or listing failed: ${e.message}`);
}
const call = (fault) =>
  client
    .callTool({ name: 'structured_output', arguments: { fault } }, undefined, { timeout: DEADLINE_MS })
    .then((result) => ({ result }), (error) => ({ error }));

const conforming = await call('none');
if (conforming.error || conforming.result.structuredContent?.status !== 'in_stock') {
  finish(COULD_NOT_RUN, `could not tell: the conforming call did not pass (${conforming.error?.message ?? JSON.stringify(conforming.result)})`);
}
const faulted = await call('error_structured_content');
if (faulted.error) {
  const message = faulted.error.message ?? String(faulted.error);
  if (/structured content does not match/i.test(message)) {
    finish(REPRODUCED, `reproduced: the isError: true result was validated against the outputSchema and callTool threw (code ${faulted.error.code}): ${message}`);
  }
  finish(COULD_NOT_RUN, `could not tell: callTool failed for another reason: ${message}`);
}
if (faulted.result.isError === true) {
  finish(FIXED, `behaved correctly: callTool returned the error result (isError: true, structuredContent ${JSON.stringify(faulted.result.structuredContent)})`);
}
finish(COULD_NOT_RUN, `could not tell: the result was not an error: ${JSON.stringify(faulted.result)}`);
