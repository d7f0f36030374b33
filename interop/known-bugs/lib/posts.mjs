// The pinned TypeScript SDK's client connected for a check that reads what the client POSTs: every JSON-RPC message
// it sends passes, as sent, to the check's `onPost` from the fetch the transport is given.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { COULD_NOT_RUN } from './serve.mjs';

/** Resolves to the connected client (connecting bounded by 5 s); a failed connect ends the check as not run. */
export async function connectRecordingPosts(url, name, finish, onPost) {
  const recording = async (input, init) => {
    if (init?.method === 'POST' && typeof init.body === 'string') {
      let message;
      try {
        message = JSON.parse(init.body);
      } catch {
        // not JSON: not a message of interest
      }
      if (typeof message === 'object' && message !== null) onPost(message);
    }
    return fetch(input, init);
  };
  const client = new Client({ name, version: '1' });
  client.onerror = () => {}; // observed through the call
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: recording }), { timeout: 5000 });
  } catch (e) {
    finish(COULD_NOT_RUN, `could not run: connect failed: ${e.message}`);
  }
  return client;
}
