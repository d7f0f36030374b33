"""OpenAI Agents SDK (openai-agents): its own MCP servers (MCPServerStdio, MCPServerStreamableHttp), the Chat
Completions model on the scripted endpoint. Everything left at the SDK's defaults."""

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp
from openai import AsyncOpenAI

NAME = "openai-agents"
PACKAGE = "openai-agents"
API = "chat.completions"
# agents/mcp/server.py: client_session_timeout_seconds, the read timeout of every MCP request (connect included).
DEFAULT_DEADLINE = "5 s per MCP request (client_session_timeout_seconds)"


async def run(model_url: str, server: dict, prompt: str) -> str:
    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=model_url, api_key="faultlab-no-key")
    model = OpenAIChatCompletionsModel(model="faultlab-scripted", openai_client=client)
    if server["transport"] == "stdio":
        mcp = MCPServerStdio(params={"command": server["command"][0], "args": server["command"][1:]}, name="lab")
    else:
        mcp = MCPServerStreamableHttp(params={"url": server["url"]}, name="lab")
    async with mcp:
        agent = Agent(name="probe", instructions="Use the tools.", model=model, mcp_servers=[mcp])
        result = await Runner.run(agent, prompt, max_turns=8)
        return str(result.final_output)
