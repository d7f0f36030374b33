// The AI SDK (`ai`) with its MCP client (`@ai-sdk/mcp`): createMCPClient over its stdio transport or Streamable
// HTTP, its tools handed to generateText, the model an OpenAI-compatible provider (Chat Completions) on the
// scripted endpoint. Everything left at the defaults.
import { createMCPClient } from "@ai-sdk/mcp";
import { StdioMCPTransport } from "@ai-sdk/mcp/mcp-stdio";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, isStepCount } from "ai";
import { runCell } from "./cell.mjs";

await runCell(
  {
    name: "ai-sdk",
    package: "@ai-sdk/mcp",
    api: "chat.completions",
    // @ai-sdk/mcp: no request timeout unless the caller passes an AbortSignal; maxRetries 0 (tools/call only).
    default_deadline: "none per MCP request (no timeout unless a signal is passed)",
  },
  async (modelUrl, server, prompt) => {
    const transport =
      server.transport === "stdio"
        ? new StdioMCPTransport({ command: server.command[0], args: server.command.slice(1) })
        : { type: "http", url: server.url };
    const mcp = await createMCPClient({ transport });
    try {
      const provider = createOpenAICompatible({ name: "faultlab", baseURL: modelUrl, apiKey: "faultlab-no-key" });
      const result = await generateText({
        model: provider.chatModel("faultlab-scripted"),
        tools: await mcp.tools(),
        system: "Use the tools.",
        prompt,
        stopWhen: isStepCount(8),
      });
      return result.text;
    } finally {
      await mcp.close();
    }
  },
);
