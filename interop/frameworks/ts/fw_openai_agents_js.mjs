// The OpenAI Agents SDK for JavaScript (`@openai/agents`): its own MCP servers (MCPServerStdio,
// MCPServerStreamableHttp), the Chat Completions model on the scripted endpoint. Everything left at the defaults.
import { Agent, MCPServerStdio, MCPServerStreamableHttp, OpenAIChatCompletionsModel, run, setTracingDisabled } from "@openai/agents";
import OpenAI from "openai";
import { runCell } from "./cell.mjs";

await runCell(
  {
    name: "openai-agents-js",
    package: "@openai/agents",
    api: "chat.completions",
    // agents-core/dist/shims/mcp-server/node.js: callTool passes `timeout` (the MCP SDK's 60 s) over the 5 s of
    // clientSessionTimeoutSeconds, which bounds the session's other requests.
    default_deadline: "60 s per tool call (timeout); 5 s for the other MCP requests (clientSessionTimeoutSeconds)",
  },
  async (modelUrl, server, prompt) => {
    setTracingDisabled(true);
    const client = new OpenAI({ baseURL: modelUrl, apiKey: "faultlab-no-key" });
    const model = new OpenAIChatCompletionsModel(client, "faultlab-scripted");
    const mcp =
      server.transport === "stdio"
        ? new MCPServerStdio({ command: server.command[0], args: server.command.slice(1), name: "lab" })
        : new MCPServerStreamableHttp({ url: server.url, name: "lab" });
    await mcp.connect();
    try {
      const agent = new Agent({ name: "probe", instructions: "Use the tools.", model, mcpServers: [mcp] });
      const result = await run(agent, prompt, { maxTurns: 8 });
      return result.finalOutput;
    } finally {
      await mcp.close();
    }
  },
);
