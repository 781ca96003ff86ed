"""Screenshots of PKB's web page, light and dark, wide (1280 px) and narrow (360 px), into
this folder, for the README. Also prints each page's weight (the HTML, then with the
stylesheet and script), which must stay under 50 KB.

Usage: python docs/web/screenshots.py PKB_SERVER [OUT_DIR]

PKB_SERVER is a built `pkb-server` (target/debug/pkb-server). Needs a Python with Playwright
(the one `.ci/install-oauth-client` makes) and Chromium (PKB_TEST_CHROMIUM, default
/usr/bin/chromium). It makes a store of example notes changed by two pretend clients over MCP
(plain JSON-RPC over HTTP), then visits each page.
"""

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

from playwright.async_api import async_playwright

CHROMIUM = os.environ.get("PKB_TEST_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
PASSWORD = "correct horse battery staple"


def start(server, args):
    """Starts `pkb-server --http 127.0.0.1:0 ARGS`; the process and its origin."""
    process = subprocess.Popen(
        [server, "--http", "127.0.0.1:0", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in process.stderr:
        if line.startswith("pkb-server: listening on "):
            return process, line.split("listening on ", 1)[1].strip().removesuffix("/mcp")
    raise SystemExit("pkb-server did not start")


class Mcp:
    """A client over Streamable HTTP, by hand: initialize, then tools/call."""

    def __init__(self, origin, name, version):
        self.url = origin + "/mcp"
        self.session = None
        self.id = 0
        self.request("initialize", {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": name, "version": version}})
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, message):
        headers = {"content-type": "application/json",
                   "accept": "application/json, text/event-stream"}
        if self.session:
            headers["mcp-session-id"] = self.session
        request = urllib.request.Request(self.url, json.dumps(message).encode(), headers)
        with urllib.request.urlopen(request) as answer:
            self.session = answer.headers.get("mcp-session-id") or self.session
            body = answer.read().decode()
        for line in body.splitlines():
            if line.startswith("data:") and line[5:].strip():
                return json.loads(line[5:])
        return json.loads(body) if body.strip() else None

    def request(self, method, params):
        self.id += 1
        return self.post({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})

    def call(self, tool, arguments):
        answer = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert not answer["result"].get("isError"), answer
        return answer["result"]


def fill(origin):
    """Notes changed by two clients: made, overwritten, edited, deleted, restored."""
    claude = Mcp(origin, "claude-code", "2.1.4")
    chat = Mcp(origin, "chatgpt", "1.2025.330")
    claude.call("write", {"title": "Trip to Lisbon", "tags": ["travel", "plans"], "body":
        "# Trip to Lisbon\n\nFly out on **Friday 12 June**, back Monday.\n\n"
        "- Hotel near the river (booked, ref. `LX-2291`)\n- Tram 28 early, before the crowds\n"
        "- Dinner with Ana: see [[Ana]]\n\nBudget: 600 EUR."})
    claude.call("write", {"title": "Ana", "tags": ["people"], "body":
        "Ana lives in Alfama. Likes *fado* and bookshops.\n\nAsk about the [[Trip to Lisbon]] dinner."})
    chat.call("write", {"title": "Groceries", "tags": ["home"], "body": "Milk, eggs, bread, coffee."})
    chat.call("write", {"title": "Reading list", "tags": ["books"], "body":
        "1. The Book of Disquiet\n2. Journey to Portugal\n\n<b>raw HTML shows as text</b>"})
    chat.call("write", {"title": "Trip to Lisbon", "overwrite": True, "tags": ["travel"], "body":
        "# Trip to Lisbon\n\nFly out on **Saturday 13 June**, back Monday.\n\n"
        "- Hotel near the station\n- Tram 28 early, before the crowds\n\nBudget: 450 EUR."})
    claude.call("edit", {"id": "reading-list", "append": "3. Baltasar and Blimunda"})
    chat.call("delete", {"id": "groceries"})


async def shoot(page, out, name, url, weights):
    for scheme in ["light", "dark"]:
        await page.emulate_media(color_scheme=scheme)
        for width, label in [(1280, "wide"), (360, "narrow")]:
            await page.set_viewport_size({"width": width, "height": 900 if width > 400 else 780})
            response = await page.goto(url)
            path = os.path.join(out, f"{name}-{label}-{scheme}.png")
            await page.screenshot(path=path)
            if scheme == "light" and label == "wide":
                weights[name] = len(await response.body())


async def main():
    server = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(__file__))
    weights = {}
    with tempfile.TemporaryDirectory() as data:
        process, origin = start(server, ["--db", os.path.join(data, "pkb.db"), "--no-seed"])
        try:
            fill(origin)
            async with async_playwright() as p:
                browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = await browser.new_page()
                await shoot(page, out, "changes", origin + "/", weights)
                await shoot(page, out, "version", origin + "/notes/trip-to-lisbon/versions/2", weights)
                await shoot(page, out, "note", origin + "/notes/trip-to-lisbon", weights)
                await shoot(page, out, "restore", origin + "/notes/trip-to-lisbon/versions/1/restore", weights)
                await shoot(page, out, "deleted", origin + "/deleted", weights)
                await shoot(page, out, "search", origin + "/search?q=lisbon", weights)
                for asset in ["/web/style.css", "/web/time.js"]:
                    weights[asset] = len(await (await page.request.get(origin + asset)).body())
                await browser.close()
        finally:
            process.terminate()
            process.wait()
        subprocess.run([server, "--data-dir", data, "account", "create", "alice", "--password-stdin"],
                       input=PASSWORD + "\n", text=True, check=True, capture_output=True)
        process, origin = start(server, ["--memory", "--auth", "local", "--data-dir", data])
        try:
            async with async_playwright() as p:
                browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = await browser.new_page()
                await shoot(page, out, "sign-in", origin + "/sign-in", weights)
                await browser.close()
        finally:
            process.terminate()
            process.wait()
    assets = weights.pop("/web/style.css") + weights.pop("/web/time.js")
    for name, size in weights.items():
        print(f"{name}: {size} bytes of HTML, {size + assets} with the stylesheet and script")
        assert size + assets < 50_000, name


asyncio.run(main())
