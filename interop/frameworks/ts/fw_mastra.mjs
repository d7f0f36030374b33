// Mastra: its MCP client (`@mastra/mcp` MCPClient) feeding a Mastra Agent (`@mastra/core`), the model an AI SDK
// OpenAI-compatible provider (Chat Completions) on the scripted endpoint. Everything left at the defaults.
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { Agent } from "@mastra/core/agent";
import { MCPClient } from "@mastra/mcp";
import { runCell } from "./cell.mjs";

await runCell(
  {
    name: "mastra",
    package: "@mastra/mcp",
    api: "chat.completions",
    // @mastra/mcp client/configuration.d.ts: timeout, 60000 ms for every server operation; connect 3000 ms.
    default_deadline: "60 s per MCP request (MCPClient timeout)",
  },
  async (modelUrl, server, prompt) => {
    const lab =
      server.transport === "stdio"
        ? { command: server.command[0], args: server.command.slice(1) }
        : { url: new URL(server.url) };
    const mcp = new MCPClient({ id: `lab-${process.pid}`, servers: { lab } });
    try {
      const provider = createOpenAICompatible({ name: "faultlab", baseURL: modelUrl, apiKey: "faultlab-no-key" });
      const agent = new Agent({
        id: "probe",
        name: "probe",
        instructions: "Use the tools.",
        model: provider.chatModel("faultlab-scripted"),
        tools: await mcp.listTools(),
      });
      const result = await agent.generate(prompt, { maxSteps: 8 });
      return result.text;
    } finally {
      await mcp.disconnect();
    }
  },
);
