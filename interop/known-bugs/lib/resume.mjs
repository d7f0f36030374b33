// The pinned TypeScript SDK's client connected for a resumption check: reconnecting every 100 ms (the lab's stream
// tools say `retry: 100`), up to 5 times, with the Last-Event-ID of every GET it sends recorded as sent.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { COULD_NOT_RUN } from './serve.mjs';

/** Resolves to `{ client, gets }`: `gets` holds each GET's Last-Event-ID (null: none), in order. */
export async function connectRecordingResumes(url, name, finish) {
  const gets = [];
  const recordingFetch = (input, init) => {
    if (init?.method === 'GET') {
      gets.push(new Headers(init.headers).get('last-event-id'));
    }
    return fetch(input, init);
  };
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: recordingFetch,
    reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 100, reconnectionDelayGrowFactor: 1, maxRetries: 5 },
  });
  const client = new Client({ name, version: '1' });
  try {
    await client.connect(transport);
  } catch (e) {
    finish(COULD_NOT_RUN, `could not run: connect failed: ${e.message}`);
  }
  return { client, gets };
}
