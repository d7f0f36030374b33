"""LlamaIndex: llama-index-tools-mcp (BasicMCPClient, McpToolSpec) in a FunctionAgent, the Anthropic LLM
(Messages API) on the scripted endpoint. The default tokenizer downloads tiktoken's table at run time, so a plain
whitespace split stands in (the scripted model needs no counting)."""

from llama_index.core import Settings
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.llms.anthropic import Anthropic
from llama_index.tools.mcp import BasicMCPClient, McpToolSpec

NAME = "llamaindex"
PACKAGE = "llama-index-tools-mcp"
API = "messages"
DEFAULT_DEADLINE = "30 s per MCP request (BasicMCPClient timeout)"


async def run(model_url: str, server: dict, prompt: str) -> str:
    Settings.tokenizer = str.split
    if server["transport"] == "stdio":
        client = BasicMCPClient(server["command"][0], args=server["command"][1:])
    else:
        client = BasicMCPClient(server["url"])
    tools = await McpToolSpec(client=client).to_tool_list_async()
    llm = Anthropic(model="claude-sonnet-4-5", base_url=model_url.removesuffix("/v1"), api_key="faultlab-no-key")
    agent = FunctionAgent(tools=tools, llm=llm, system_prompt="Use the tools.")
    return str(await agent.run(prompt))
