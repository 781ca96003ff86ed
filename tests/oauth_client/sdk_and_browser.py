"""The official MCP Python SDK's OAuth client against `pkb-server --auth local`, its redirect
handler driving headless Chromium (Playwright, with Debian's chromium) through PKB's sign-in
and consent pages with the keyboard. Run by tests/tests/oauth_local_python.rs; not on its own.

Usage: sdk_and_browser.py MCP_URL ARTIFACTS_DIR PKB_SERVER DATA_DIR [CLIENT_METADATA_URL]

It connects (discovery, registration or a client metadata document, PKCE), writes and reads a
note, connects again once its access token counts as expired (so the SDK refreshes), then revokes the
client at the terminal and checks that its token is refused. Prints `ok` at the end; any
failure raises.
"""

import asyncio
import os
import subprocess
import sys
import urllib.parse

import httpx2
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from playwright.async_api import async_playwright

CALLBACK = "http://127.0.0.1:33418/callback"
ACCOUNT = "alice"
PASSWORD = "correct horse battery staple"


class MemoryStorage(TokenStorage):
    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


class BrowserPerson:
    """A person at a browser: signs in and allows, typing, as the redirect handler asks."""

    def __init__(self, browser, artifacts: str, label: str):
        self.browser = browser
        self.artifacts = artifacts
        self.label = label
        self.callback: asyncio.Future | None = None
        self.visits = 0

    async def redirect_handler(self, authorization_url: str) -> None:
        self.visits += 1
        self.callback = asyncio.get_running_loop().create_future()
        page = await self.browser.new_page()
        landed = self.callback

        async def on_callback(route):
            if not landed.done():
                landed.set_result(route.request.url)
            await route.fulfill(status=200, content_type="text/plain", body="back in the client")

        await page.route(CALLBACK + "*", on_callback)
        await page.goto(authorization_url)
        shot = lambda name: os.path.join(self.artifacts, f"{self.label}-{self.visits}-{name}.png")
        await page.screenshot(path=shot("sign-in"))
        assert "Sign in to PKB" in await page.content()
        # The keyboard only: the account field has the focus; Tab to the password; Enter submits.
        await page.keyboard.type(ACCOUNT)
        await page.keyboard.press("Tab")
        await page.keyboard.type(PASSWORD)
        await page.keyboard.press("Enter")
        await page.wait_for_selector("button[value=allow]")
        content = await page.content()
        await page.screenshot(path=shot("consent"))
        assert "read and change your notes" in content, content
        assert CALLBACK in content, content
        await page.focus("button[value=allow]")
        await page.keyboard.press("Enter")
        await asyncio.wait_for(asyncio.shield(landed), 20)
        await page.close()

    async def callback_handler(self) -> AuthorizationCodeResult:
        url = await asyncio.wait_for(self.callback, 30)
        query = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)
        assert "code" in query, url
        return AuthorizationCodeResult(
            code=query["code"][0],
            state=query.get("state", [None])[0],
            iss=query.get("iss", [None])[0],
        )


def failed(result) -> bool:
    """Whether a tools/call result is an error (the field's name differs between SDK versions)."""
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


def structured(result):
    return getattr(result, "structured_content", getattr(result, "structuredContent", None))


def provider(url: str, storage: MemoryStorage, person: BrowserPerson, metadata_url: str | None):
    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="PKB SDK test",
            redirect_uris=[CALLBACK],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=person.redirect_handler,
        callback_handler=person.callback_handler,
        client_metadata_url=metadata_url,
    )


async def session_calls(url: str, auth, calls):
    async with create_mcp_http_client(auth=auth) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return [await session.call_tool(name, args) for name, args in calls]


async def main():
    url, artifacts, server_binary, data_dir = sys.argv[1:5]
    metadata_url = sys.argv[5] if len(sys.argv) > 5 else None
    label = "metadata-document" if metadata_url else "registration"
    os.makedirs(artifacts, exist_ok=True)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=os.environ.get("PKB_TEST_CHROMIUM", "/usr/bin/chromium"),
            args=["--no-sandbox"],
        )
        person = BrowserPerson(browser, artifacts, label)
        storage = MemoryStorage()
        auth = provider(url, storage, person, metadata_url)
        title = f"Written through the SDK by {label}"
        written, fetched = await session_calls(
            url,
            auth,
            [("write", {"title": title, "body": "hello", "overwrite": True}), ("search", {"query": "SDK"})],
        )
        assert not failed(written), written
        assert title in str(structured(fetched)), fetched
        assert person.visits == 1
        client_id = storage.client_info.client_id
        if metadata_url:
            assert client_id == metadata_url, client_id

        # The access token as if it had expired: the SDK refreshes, without the browser.
        first = storage.tokens
        auth.context.token_expiry_time = 1.0
        (listed,) = await session_calls(url, auth, [("search", {"query": "SDK"})])
        assert not failed(listed), listed
        assert person.visits == 1, "refreshed, not signed in again"
        assert storage.tokens.refresh_token != first.refresh_token, "rotated"

        # Revoked at the terminal: the token is refused at once.
        subprocess.run(
            [server_binary, "--data-dir", data_dir, "account", "revoke", ACCOUNT, client_id],
            check=True,
        )
        await asyncio.sleep(1.0)
        async with httpx2.AsyncClient() as http:
            answer = await http.post(
                url,
                headers={
                    "authorization": f"Bearer {storage.tokens.access_token}",
                    "content-type": "application/json",
                    "accept": "application/json, text/event-stream",
                },
                content='{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}',
            )
            assert answer.status_code == 401, answer
        await browser.close()
    print("ok")


asyncio.run(main())
