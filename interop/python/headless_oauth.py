"""The official MCP Python SDK's OAuth client, headless, against `faultlab serve --auth` (which approves at once):
an in-memory token storage, and an OAuthClientProvider whose redirect handler fetches the authorization URL without
following the redirect and whose callback hands the SDK the code, state and iss of its Location. Shared by
oauth_client.py (the interop-auth stage) and the known-bug checks that need authorization."""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable

import httpx2
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT = "http://127.0.0.1:9/callback"


class Memory:
    """The SDK's TokenStorage in memory; kept across two providers, it stands for a file kept across a restart."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def provider(url: str, storage: Memory, client_name: str, on_redirect: Callable[[], None]) -> OAuthClientProvider:
    """A headless provider for `url`; `on_redirect` is called each time the SDK sends the user to authorize (where a
    real client opens a browser)."""
    pending: dict[str, str] = {}

    async def redirect_handler(authorization_url: str) -> None:
        on_redirect()
        async with httpx2.AsyncClient(follow_redirects=False) as http:
            response = await http.get(authorization_url)
        pending.clear()
        pending.update(urllib.parse.parse_qsl(urllib.parse.urlsplit(response.headers["location"]).query))

    async def callback_handler() -> AuthorizationCodeResult:
        if "code" not in pending:
            raise RuntimeError(f"authorization gave no code ({pending.get('error', 'no redirect')})")
        return AuthorizationCodeResult(code=pending["code"], state=pending.get("state"), iss=pending.get("iss"))

    metadata = OAuthClientMetadata(client_name=client_name, redirect_uris=[REDIRECT],
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                                   token_endpoint_auth_method="none")
    return OAuthClientProvider(url, metadata, storage, redirect_handler, callback_handler)
