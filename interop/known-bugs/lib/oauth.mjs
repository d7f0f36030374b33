// What the TypeScript OAuth reproductions share: an OAuthClientProvider of a headless app, kept in memory.
// Its user agent is `onRedirect(url)`: by default it fetches the authorization URL without following the redirect
// (faultlab approves at once) and keeps the code the Location carries in `provider.code`.

/** The redirect URI every reproduction registers: nothing listens there, the code is read from the Location. */
export const REDIRECT = "http://127.0.0.1:9/callback";

/** A dynamically registered public client; `redirects` counts the authorizations the SDK started. */
export function headlessProvider(onRedirect) {
  return {
    get redirectUrl() { return REDIRECT; },
    get clientMetadata() {
      return { client_name: "faultlab-repro", redirect_uris: [REDIRECT], grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"], token_endpoint_auth_method: "none" };
    },
    client: undefined, stored: undefined, verifier: undefined, code: undefined, redirects: 0,
    clientInformation() { return this.client; },
    saveClientInformation(info) { this.client = info; },
    tokens() { return this.stored; },
    saveTokens(tokens) { this.stored = tokens; },
    saveCodeVerifier(v) { this.verifier = v; },
    codeVerifier() { return this.verifier; },
    async redirectToAuthorization(url) {
      this.redirects += 1;
      if (onRedirect) return onRedirect(url);
      const response = await fetch(url, { redirect: "manual" });
      this.code = new URL(response.headers.get("location")).searchParams.get("code") ?? undefined;
    },
  };
}
