// typescript-sdk PR #2249 (review findings, fixed there in 38c1058 and 2c2a127 for the v2 client only): on a paged
// tools/list the 1.x client loses the outputSchema validators of tools it listed, so their non-conforming
// structuredContent is returned as a success. Every listTools() replaces the validators with those of the one page
// it fetched, and the listChanged auto-refresh fetches page 1 only.
//
// `faultlab serve --transport http` (port 0, killed on every exit path); one SDK client (2025-11-25 session), made
// with `listChanged: { tools: { onChanged } }` (auto-refresh on, the default debounce), its POSTs recorded:
// 1. listTools() while the list is whole (one page): every validator is built; structured_output
//    {fault: output_schema_violation} (its structuredContent lacks the required `count`) must throw -32602: the
//    control, showing the SDK validates this tool once it has the schema.
// 2. list_pagination {variant: repeated-name, pageSize: 20}: every later tools/list reply of the session comes in
//    pages of 20 (each page after the first repeating the last name of the page before; the last page without a
//    nextCursor), and notifications/tools/list_changed precedes the result. The auto-refresh lists again and hands
//    onChanged the tools it fetched. The same violating call follows.
// 3. The application walks the pages itself with the cursor loop listTools()'s JSDoc shows (at most 6 pages), and
//    makes the same call again. structured_output is listed on page 2 of 3.
// Exit 0: the wrong behaviour was seen (still present); 3: the client behaved correctly; 1: the check could not run.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { COULD_NOT_RUN, FIXED, REPRODUCED, startServe } from '../lib/serve.mjs';

// Each request's bound, and the wait for the auto-refresh (its 300 ms debounce and one or more round trips on
// loopback): a hang is detected by them, not waited out.
const DEADLINE_MS = 5000;
const REFRESH_MS = 3000;
const PAGE_SIZE = 20; // faultlab serve lists about 40 tools: three pages, structured_output on the second
const MAX_PAGES = 6;
const { url, finish } = await startServe();

const lists = []; // the cursor of every tools/list the client POSTs, as sent (null: none)
const recording = async (input, init) => {
  if (init?.method === 'POST' && typeof init.body === 'string') {
    try {
      const message = JSON.parse(init.body);
      if (message?.method === 'tools/list') lists.push(message.params?.cursor ?? null);
    } catch {
      // not JSON: not a message of interest
    }
  }
  return fetch(input, init);
};
let refreshed;
const refreshedOnce = new Promise((resolve) => {
  refreshed = resolve;
});
const client = new Client(
  { name: 'known-bug-2249', version: '1.0.0' },
  { listChanged: { tools: { onChanged: (error, tools) => refreshed({ error, tools }) } } }
);
client.onerror = () => {}; // observed through the calls
const call = (name, args) =>
  client.callTool({ name, arguments: args }, undefined, { timeout: DEADLINE_MS }).then(
    (result) => ({ structured: result.structuredContent, isError: result.isError === true }),
    (error) => ({ error: `${error.code ?? ''} ${error.message ?? error}`.trim() })
  );
const violate = () => call('structured_output', { fault: 'output_schema_violation' });

let whole;
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: recording }), { timeout: DEADLINE_MS });
  whole = await client.listTools(undefined, { timeout: DEADLINE_MS });
} catch (e) {
  finish(COULD_NOT_RUN, `could not run: connecting or listing failed: ${e.message}`);
}
const control = await violate();
if (!control.error || !/structured content does not match/i.test(control.error)) {
  finish(COULD_NOT_RUN, `could not tell: with the whole list the violation was not rejected: ${JSON.stringify(control)}`);
}

const before = lists.length;
const armed = await call('list_pagination', { variant: 'repeated-name', pageSize: PAGE_SIZE });
if (armed.error || armed.isError) finish(COULD_NOT_RUN, `could not run: list_pagination failed: ${JSON.stringify(armed)}`);
const refresh = await Promise.race([
  refreshedOnce,
  new Promise((resolve) => setTimeout(() => resolve(null), REFRESH_MS))
]);
if (refresh === null || refresh.error) {
  finish(COULD_NOT_RUN, `could not tell: no auto-refresh within ${REFRESH_MS} ms (${refresh?.error?.message ?? 'onChanged not called'})`);
}
const refreshCursors = lists.slice(before);
const afterRefresh = await violate();

// The application's own walk, bounded: the loop listTools()'s JSDoc shows.
const walkStart = lists.length;
const pages = [];
let cursor;
do {
  const page = await client.listTools(cursor === undefined ? undefined : { cursor }, { timeout: DEADLINE_MS });
  pages.push(page.tools.map((t) => t.name));
  cursor = page.nextCursor;
} while (cursor && pages.length < MAX_PAGES);
const walkCursors = lists.slice(walkStart);
const afterWalk = await violate();

const onPage = pages.findIndex((names) => names.includes('structured_output')) + 1;
const lost = (r) => !r.error && !r.isError && r.structured && !('count' in r.structured);
const kept = (r) => Boolean(r.error && /structured content does not match/i.test(r.error));
const seen =
  `whole list ${whole.tools.length} tools, violation rejected (${control.error}); after list_changed the ` +
  `auto-refresh sent tools/list with cursors ${JSON.stringify(refreshCursors)} and handed onChanged ` +
  `${refresh.tools.length} tools; the application's walk fetched ${pages.length} pages (cursors ` +
  `${JSON.stringify(walkCursors)}), structured_output on page ${onPage}`;
if (onPage < 1 || onPage === pages.length) {
  finish(COULD_NOT_RUN, `could not tell: structured_output is not on an earlier page (${seen})`);
}
if (lost(afterRefresh) && lost(afterWalk) && refresh.tools.length < whole.tools.length) {
  finish(REPRODUCED, `reproduced: ${seen}; the same violating call then returned structuredContent ` +
    `${JSON.stringify(afterWalk.structured)} as a success, after the refresh and after the walk alike`);
}
if (kept(afterRefresh) && kept(afterWalk)) {
  finish(FIXED, `behaved correctly: ${seen}; the violating call was still rejected after the refresh and after the walk`);
}
finish(COULD_NOT_RUN, `could not tell (one path fixed?): ${seen}; after the refresh ${JSON.stringify(afterRefresh)}, ` +
  `after the walk ${JSON.stringify(afterWalk)}`);
