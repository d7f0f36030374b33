"""A tiny agent on the OpenAI Agents SDK (openai-agents), its model `faultlab model`, its MCP server over
Streamable HTTP (`faultlab serve` or `faultlab proxy`). Started by scripts/frameworks.sh.

    python openai_agents_agent.py --model-url URL/v1 --mcp-url URL/mcp --api responses|chat [--stream]

Prints one JSON line: {"framework", "api", "stream", "ok", "final_output" | "error"}; exits 0 when the run ended
with a final output, 1 otherwise.
"""

import argparse
import asyncio
import json

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    set_tracing_disabled,
)
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI


async def run(args: argparse.Namespace) -> dict:
    # Nothing leaves the machine: no traces are exported, the model is the local endpoint.
    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=args.model_url, api_key="faultlab-no-key")
    if args.api == "responses":
        model = OpenAIResponsesModel(model="faultlab-scripted", openai_client=client)
    else:
        model = OpenAIChatCompletionsModel(model="faultlab-scripted", openai_client=client)
    # The SDK's 5 s MCP deadline covers connecting too; a loaded machine can take longer to start the session.
    mcp = MCPServerStreamableHttp(params={"url": args.mcp_url}, name="faultlab", client_session_timeout_seconds=30)
    async with mcp as server:
        agent = Agent(name="probe", instructions="Use the tools.", model=model, mcp_servers=[server])
        prompt = "Ping the server, then wait 100 ms."
        if args.stream:
            result = Runner.run_streamed(agent, prompt, max_turns=8)
            async for _ in result.stream_events():
                pass
        else:
            result = await Runner.run(agent, prompt, max_turns=8)
        return {"final_output": result.final_output}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-url", required=True)
    parser.add_argument("--mcp-url", required=True)
    parser.add_argument("--api", choices=["responses", "chat"], required=True)
    parser.add_argument("--stream", action="store_true")
    args = parser.parse_args()
    record = {"framework": "openai-agents", "api": args.api, "stream": args.stream}
    try:
        record.update(asyncio.run(run(args)))
        record["ok"] = True
    except Exception as error:  # the record says what ended the run; the script decides what it means
        cause = error.__cause__ or error.__context__
        detail = f"{type(error).__name__}: {error}"
        if cause is not None:
            detail += f" (from {type(cause).__name__}: {cause})"
        record.update(ok=False, error=detail)
    print(json.dumps(record), flush=True)
    return 0 if record["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
