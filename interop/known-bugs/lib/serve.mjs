// What every TypeScript reproduction shares: `faultlab serve` (FAULTLAB_BIN) on a loopback port of its own, its
// URL read from its "listening at" line, its JSON event lines handed to the check, the whole check bounded and
// the server killed on every path; and the verdict as the exit code scripts/known-client-bugs.sh reads.
//
// scripts/known-client-bugs.sh copies this folder and the repro beside the pinned SDK's node_modules (keeping
// ../lib/ relative), so that bare imports in a repro resolve to that SDK.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/** The wrong behaviour was seen: the bug is still there. */
export const REPRODUCED = 0;
/** The check could not run or could not decide. */
export const COULD_NOT_RUN = 1;
/** The client behaved correctly: fixed upstream. */
export const FIXED = 3;

/**
 * Starts `faultlab serve --transport http --port 0 ...extraArgs` and resolves to `{ url, finish }` once it listens.
 * `finish(code, line)` prints the verdict line, kills the server and exits; it is also called with COULD_NOT_RUN when
 * the server exits early or the check outlives `lifetimeMs` (20 s). `onEvent` gets each JSON line of its stderr.
 */
export async function startServe(extraArgs = [], { lifetimeMs = 20000, onEvent } = {}) {
  const bin = process.env.FAULTLAB_BIN;
  if (!bin) {
    console.log('could not run: FAULTLAB_BIN is not set');
    process.exit(COULD_NOT_RUN);
  }
  const server = spawn(bin, ['serve', '--transport', 'http', '--port', '0', ...extraArgs], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let lifetime;
  const finish = (code, line) => {
    clearTimeout(lifetime);
    console.log(line);
    server.kill('SIGKILL');
    process.exit(code);
  };
  lifetime = setTimeout(() => finish(COULD_NOT_RUN, `could not run: the check passed its ${lifetimeMs / 1000} s bound`), lifetimeMs);
  server.on('error', (e) => finish(COULD_NOT_RUN, `could not run: ${bin}: ${e.message}`));
  const url = await new Promise((resolve) => {
    createInterface({ input: server.stderr }).on('line', (line) => {
      const listening = line.match(/^faultlab: listening at (\S+)/);
      if (listening) resolve(listening[1]);
      if (onEvent && line.startsWith('{')) {
        try {
          onEvent(JSON.parse(line));
        } catch {
          // not an event line
        }
      }
    });
    server.on('exit', (code) => finish(COULD_NOT_RUN, `could not run: faultlab serve exited (${code}) before the check ended`));
  });
  return { url, finish };
}
