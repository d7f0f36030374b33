"""LangGraph with langchain-mcp-adapters: MultiServerMCPClient's tools in the prebuilt ReAct agent, ChatOpenAI on
the scripted endpoint. Everything left at the frameworks' defaults."""

from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent

NAME = "langgraph"
PACKAGE = "langchain-mcp-adapters"
API = "chat.completions"
DEFAULT_DEADLINE = "none per tool call (stdio); 5 min SSE read timeout (streamable_http)"


async def run(model_url: str, server: dict, prompt: str) -> str:
    if server["transport"] == "stdio":
        connection = {"transport": "stdio", "command": server["command"][0], "args": server["command"][1:]}
    else:
        connection = {"transport": "streamable_http", "url": server["url"]}
    client = MultiServerMCPClient({"lab": connection})
    tools = await client.get_tools()
    llm = ChatOpenAI(model="faultlab-scripted", base_url=model_url, api_key="faultlab-no-key")
    agent = create_react_agent(llm, tools)
    result = await agent.ainvoke({"messages": [("user", prompt)]}, {"recursion_limit": 16})
    return str(result["messages"][-1].content)
