"""smolagents: MCPClient (the mcp extra, on mcpadapt) feeding a ToolCallingAgent, OpenAIModel on the scripted
endpoint. smolagents sends tool results back as user text ("Observation:" / "Error:"), not as the API's tool
messages, so the scripted model cannot see them: the run is one step (the fault's tool), and the matrix reads what
the framework passed back from the text of its next model request. smolagents is synchronous: each run gets a daemon thread of its own, so a run that never returns holds
no shared worker and does not keep the process alive. The agent ends by calling its final_answer tool, so the
script asks for that last."""

import asyncio
import threading

from mcp import StdioServerParameters
from smolagents import MCPClient, OpenAIModel, ToolCallingAgent

NAME = "smolagents"
PACKAGE = "smolagents"
API = "chat.completions"
DEFAULT_DEADLINE = "30 s connect; none per tool call (MCPClient)"
# The driver reads the observation from the request text and runs only the fault step (see above).
TOOL_RESULTS_AS_TEXT = True


def _run(model_url: str, server: dict, prompt: str) -> str:
    if server["transport"] == "stdio":
        params = StdioServerParameters(command=server["command"][0], args=server["command"][1:])
    else:
        params = {"url": server["url"], "transport": "streamable-http"}
    model = OpenAIModel(model_id="faultlab-scripted", api_base=model_url, api_key="faultlab-no-key")
    with MCPClient(params, structured_output=False) as tools:
        agent = ToolCallingAgent(tools=tools, model=model, max_steps=1, verbosity_level=-1)
        return str(agent.run(prompt))


async def run(model_url: str, server: dict, prompt: str) -> str:
    loop = asyncio.get_running_loop()
    done: asyncio.Future = loop.create_future()

    def settle(outcome, error):
        if done.cancelled():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(outcome)

    def thread():
        try:
            outcome = _run(model_url, server, prompt)
        except BaseException as error:  # handed to the awaiting task as the run's end
            loop.call_soon_threadsafe(settle, None, error)
        else:
            loop.call_soon_threadsafe(settle, outcome, None)

    threading.Thread(target=thread, daemon=True).start()
    return await done
