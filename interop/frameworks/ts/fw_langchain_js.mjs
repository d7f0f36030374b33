// LangChain.js: MultiServerMCPClient (`@langchain/mcp-adapters`) feeding LangGraph's prebuilt ReAct agent, the
// model ChatOpenAI (Chat Completions) on the scripted endpoint. Everything left at the defaults.
import { MultiServerMCPClient } from "@langchain/mcp-adapters";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { ChatOpenAI } from "@langchain/openai";
import { runCell } from "./cell.mjs";

await runCell(
  {
    name: "langchain-js",
    package: "@langchain/mcp-adapters",
    api: "chat.completions",
    // The MCP SDK's request timeout (60 s) unless defaultToolTimeout is set.
    default_deadline: "60 s per MCP request (the MCP SDK's default; defaultToolTimeout unset)",
  },
  async (modelUrl, server, prompt) => {
    const lab =
      server.transport === "stdio"
        ? { transport: "stdio", command: server.command[0], args: server.command.slice(1) }
        : { transport: "http", url: server.url };
    const mcp = new MultiServerMCPClient({ mcpServers: { lab } });
    try {
      const model = new ChatOpenAI({
        model: "faultlab-scripted",
        apiKey: "faultlab-no-key",
        configuration: { baseURL: modelUrl },
      });
      const agent = createReactAgent({ llm: model, tools: await mcp.getTools() });
      const state = await agent.invoke({ messages: [{ role: "user", content: prompt }] }, { recursionLimit: 16 });
      const last = state.messages[state.messages.length - 1];
      return typeof last.content === "string" ? last.content : JSON.stringify(last.content);
    } finally {
      await mcp.close();
    }
  },
);
