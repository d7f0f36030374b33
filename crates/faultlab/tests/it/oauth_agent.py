"""An agent that does the OAuth flow itself over HTTP (no SDK), then the task; every secret it was handed goes to
the file FAULTLAB_TEST_SECRETS names, so the test can look for them in the run's output."""
import base64, hashlib, json, os, re, secrets, urllib.error, urllib.parse, urllib.request

config = json.load(open(os.environ["FAULTLAB_MCP_CONFIG"]))
url = config["mcpServers"]["workspace"]["url"]
seen = []


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None


opener = urllib.request.build_opener(NoRedirect)


def send(method, target, body=None, headers=None, form=False):
    data = None
    headers = dict(headers or {})
    if body is not None and form:
        data = urllib.parse.urlencode(body).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    elif body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(target, data=data, headers=headers, method=method)
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


state = {"session": None, "client": None, "tokens": None, "meta": None}


def authorize():
    if state["meta"] is None:
        status, headers, _ = send("POST", url, {"jsonrpc": "2.0", "id": 0, "method": "ping"},
                                  {"Accept": "application/json, text/event-stream"})
        prm_url = re.search(r'resource_metadata="([^"]+)"', headers["WWW-Authenticate"]).group(1)
        prm = json.loads(send("GET", prm_url)[2])
        issuer = prm["authorization_servers"][0]
        state["meta"] = json.loads(send("GET", issuer + "/.well-known/oauth-authorization-server")[2])
        registered = json.loads(send("POST", state["meta"]["registration_endpoint"],
                                     {"redirect_uris": ["http://127.0.0.1/cb"], "token_endpoint_auth_method": "none"})[2])
        state["client"] = registered["client_id"]
    meta = state["meta"]
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    query = urllib.parse.urlencode({
        "response_type": "code", "client_id": state["client"], "redirect_uri": "http://127.0.0.1/cb",
        "code_challenge": challenge, "code_challenge_method": "S256", "state": "s", "resource": url})
    status, headers, _ = send("GET", meta["authorization_endpoint"] + "?" + query)
    code = urllib.parse.parse_qs(urllib.parse.urlparse(headers["Location"]).query)["code"][0]
    status, _, body = send("POST", meta["token_endpoint"], {
        "grant_type": "authorization_code", "code": code, "redirect_uri": "http://127.0.0.1/cb",
        "code_verifier": verifier, "client_id": state["client"], "resource": url}, form=True)
    tokens = json.loads(body)
    seen.extend([code, verifier, tokens["access_token"], tokens.get("refresh_token", "")])
    state["tokens"] = tokens


def refresh():
    status, _, body = send("POST", state["meta"]["token_endpoint"], {
        "grant_type": "refresh_token", "refresh_token": state["tokens"]["refresh_token"],
        "client_id": state["client"], "resource": url}, form=True)
    if status != 200:
        return False
    state["tokens"] = json.loads(body)
    seen.extend([state["tokens"]["access_token"], state["tokens"].get("refresh_token", "")])
    return True


def rpc(message):
    for _ in range(3):
        headers = {"Accept": "application/json, text/event-stream",
                   "Authorization": "Bearer " + state["tokens"]["access_token"],
                   "MCP-Protocol-Version": "2025-06-18"}
        if state["session"]:
            headers["Mcp-Session-Id"] = state["session"]
        status, response_headers, body = send("POST", url, message, headers)
        if status == 401:
            if not refresh():
                authorize()
            continue
        if response_headers.get("Mcp-Session-Id"):
            state["session"] = response_headers["Mcp-Session-Id"]
        for line in body.splitlines():
            if line.startswith("data:"):
                body = line[5:]
        return json.loads(body) if body.strip() else None
    raise SystemExit("refused three times")


authorize()
rpc({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "oauth-test-agent", "version": "1"}}})
rpc({"jsonrpc": "2.0", "method": "notifications/initialized"})
read = rpc({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": "input.txt"}}})
nonce = re.search(r"nonce: ([0-9a-f]{16})", json.dumps(read)).group(1)
rpc({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
     "params": {"name": "write_file", "arguments": {"path": "output.txt", "content": nonce}}})
with open(os.environ["FAULTLAB_TEST_SECRETS"], "w") as f:
    json.dump([s for s in seen if s], f)
with open(os.environ["FAULTLAB_RESULT"], "w") as f:
    json.dump({"status": "success", "message": "done", "answer": nonce}, f)
