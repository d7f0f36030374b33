"""PydanticAI (pydantic-ai-slim): MCPToolset (on the FastMCP client), the OpenAI Chat model on the scripted
endpoint. Everything left at the framework's defaults."""

from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

NAME = "pydantic-ai"
PACKAGE = "pydantic-ai-slim"
API = "chat.completions"
DEFAULT_DEADLINE = "none per tool call; read_timeout 5 min on the session (MCPToolset)"


async def run(model_url: str, server: dict, prompt: str) -> str:
    model = OpenAIChatModel("faultlab-scripted", provider=OpenAIProvider(base_url=model_url, api_key="faultlab-no-key"))
    if server["transport"] == "stdio":
        toolset = MCPToolset(StdioTransport(server["command"][0], server["command"][1:]))
    else:
        toolset = MCPToolset(server["url"])
    agent = Agent(model, instructions="Use the tools.", toolsets=[toolset])
    async with agent:
        result = await agent.run(prompt)
    return str(result.output)
