// A stdio MCP relay on the official TypeScript SDK, for the proxy bench (crates/faultlab-bench/src/proxy) to
// compare `faultlab proxy` with. It forwards every JSON-RPC message both ways unchanged, at the transport level:
// StdioServerTransport toward the client, StdioClientTransport toward the server, each one's onmessage sending on
// the other. So it costs what the SDK's own stdio framing and parsing cost, and nothing of a protocol
// implementation (no Client or Server object: no capability negotiation, request tracking or validation of
// results beyond the transports' JSON-RPC message schema).
//
//   node ts-relay.mjs SDK_DIR -- COMMAND [ARGS...]
//
// SDK_DIR is the folder of the @modelcontextprotocol/sdk package to use (the bench passes the one pinned under
// .cache, so this file needs no node_modules of its own). The server's stderr goes where the relay's goes; the
// server gets the relay's whole environment (not the SDK's filtered default), as the other relays pass theirs.
// Ends when either side closes.
import { createRequire } from 'node:module';
import path from 'node:path';
import process from 'node:process';

const [sdkDir, dashes, command, ...args] = process.argv.slice(2);
if (!sdkDir || dashes !== '--' || !command) {
    process.stderr.write('usage: node ts-relay.mjs SDK_DIR -- COMMAND [ARGS...]\n');
    process.exit(2);
}
// Resolved through the package's own exports map (a self-reference from inside the package).
const require = createRequire(path.join(path.resolve(sdkDir), 'package.json'));
const { StdioServerTransport } = require('@modelcontextprotocol/sdk/server/stdio.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const toClient = new StdioServerTransport();
const toServer = new StdioClientTransport({ command, args, env: process.env, stderr: 'inherit' });

let closing = false;
function shutdown(code) {
    if (closing) return;
    closing = true;
    // Closing the client transport ends the server (stdin closed, then SIGTERM, then SIGKILL).
    toServer.close().finally(() => process.exit(code));
}
function fail(where) {
    return (error) => {
        process.stderr.write(`ts-relay: ${where}: ${error?.stack ?? error}\n`);
        shutdown(1);
    };
}

toClient.onmessage = (message) => toServer.send(message).catch(fail('sending to the server'));
toServer.onmessage = (message) => toClient.send(message).catch(fail('sending to the client'));
// A line that is not a JSON-RPC message is reported by the transport and dropped, as the SDK does; the relay
// goes on.
toClient.onerror = (error) => process.stderr.write(`ts-relay: from the client: ${error}\n`);
toServer.onerror = (error) => process.stderr.write(`ts-relay: from the server: ${error}\n`);
toServer.onclose = () => shutdown(0);
// StdioServerTransport does not watch for the end of stdin; the relay does.
process.stdin.on('end', () => shutdown(0));

// The server first, so that no message from the client arrives before there is somewhere to send it.
await toServer.start();
await toClient.start();
