"""A person at headless Chromium (Playwright, Debian's chromium) on PKB's web page, with the
keyboard where a person would type. Run by tests/tests/web_browser.rs between its MCP steps;
not on its own.

Usage: story.py STEP ORIGIN ARTIFACTS_DIR [ARGS...]

Steps:
  undo-overwrite CLIENT   Changes, filtered by CLIENT; the overwrite's diff; restore the
                          version before it, confirmed.
  undo-delete TITLE       Deleted notes; restore TITLE, confirmed.
  two-people PASSWORD     Under --auth local: alice signs in and restores her note; Bob's
                          note is never shown; forged posts (no token, Bob's session with
                          Alice's token) are refused.
Prints `ok` at the end; any failure raises.
"""

import asyncio
import os
import re
import sys

from playwright.async_api import async_playwright

CHROMIUM = os.environ.get("PKB_TEST_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]


async def undo_overwrite(page, origin, shot, client):
    await page.goto(origin + "/")
    await shot("changes")
    # Filter by the client, typing as a person would.
    await page.get_by_label("Client").fill(client)
    await page.get_by_label("Client").press("Enter")
    await page.wait_for_url(re.compile(r".*client=.*"))
    item = page.locator("ol.changes > li", has_text="Trip plan").first
    assert client in await item.inner_text(), await item.inner_text()
    assert "replaced" in await item.inner_text(), await item.inner_text()
    await item.get_by_role("link", name=re.compile("see what changed")).click()
    await page.wait_for_url(re.compile(r".*/notes/trip-plan/versions/2$"))
    await shot("version")
    diff = page.locator(".diff")
    assert await diff.locator("del").count() > 0 and await diff.locator("ins").count() > 0
    deleted = " ".join(await diff.locator("del").all_inner_texts())
    inserted = " ".join(await diff.locator("ins").all_inner_texts())
    assert "Lisbon" in deleted and "Nowhere" in inserted, (deleted, inserted)
    await page.get_by_role("button", name=re.compile("Restore version 1, as before this change")).click()
    await page.wait_for_url(re.compile(r".*/notes/trip-plan/versions/1/restore\??$"))
    await shot("confirm")
    await page.get_by_role("button", name="Restore version 1").click()
    await page.wait_for_url(re.compile(r".*/notes/trip-plan\?restored=1$"))
    await shot("restored")
    assert "Version 1 was restored" in await page.content()
    assert "Lisbon" in await page.locator("article.body").inner_text()


async def undo_delete(page, origin, shot, title):
    await page.goto(origin + "/")
    await page.get_by_role("link", name="Deleted").click()
    await page.wait_for_url(origin + "/deleted")
    await shot("deleted")
    item = page.locator("ol.list > li", has_text=title).first
    await item.get_by_role("button", name=re.compile("Restore")).click()
    await page.wait_for_url(re.compile(r".*/restore\??$"))
    await page.get_by_role("button", name=re.compile(r"Restore version \d+")).click()
    await page.wait_for_url(re.compile(r".*\?restored=\d+$"))
    assert title in await page.locator("h1").inner_text()


async def sign_in(page, origin, account, password):
    await page.goto(origin + "/")
    await page.wait_for_url(origin + "/sign-in")
    # The keyboard only: the account field has the focus; Tab to the password; Enter submits.
    await page.keyboard.type(account)
    await page.keyboard.press("Tab")
    await page.keyboard.type(password)
    await page.keyboard.press("Enter")
    await page.wait_for_url(origin + "/")


async def two_people(browser, page, origin, shot, password):
    await page.goto(origin + "/")
    await shot("sign-in")
    await sign_in(page, origin, "alice", password)
    await shot("changes")
    content = await page.content()
    assert "Alice plan" in content and "Bob secret" not in content and "bob-secret" not in content
    for path in ["/notes/bob-secret", "/notes/bob-secret/versions/1", "/search?q=secret"]:
        answer = await page.goto(origin + path)
        text = await page.content()
        assert "Bob secret" not in text and "bob only" not in text, path
        if "/notes/" in path:
            assert answer.status == 404, (path, answer.status)
    # A post without the page's token, with Alice's cookie: refused, nothing changes.
    forged = await page.request.post(origin + "/notes/alice-plan/versions/1/restore", form={})
    assert forged.status == 403, forged.status
    # Bob's session posting Alice's token: refused.
    await page.goto(origin + "/notes/alice-plan/versions/1/restore")
    alice_csrf = await page.locator("input[name=csrf]").first.get_attribute("value")
    bob_context = await browser.new_context()
    bob = await bob_context.new_page()
    await sign_in(bob, origin, "bob", password)
    assert "Alice plan" not in await bob.content()
    forged = await bob.request.post(
        origin + "/notes/alice-plan/versions/1/restore", form={"csrf": alice_csrf})
    assert forged.status == 403, forged.status
    await bob_context.close()
    # Alice restores her first version through the page.
    await page.get_by_role("button", name="Restore version 1").click()
    await page.wait_for_url(re.compile(r".*/notes/alice-plan\?restored=1$"))
    assert "alice one" in await page.locator("article.body").inner_text()


async def main():
    step, origin, artifacts = sys.argv[1], sys.argv[2].rstrip("/"), sys.argv[3]
    rest = sys.argv[4:]
    os.makedirs(artifacts, exist_ok=True)
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        context = await browser.new_context(java_script_enabled=True)
        page = await context.new_page()
        counter = [0]

        async def shot(name):
            counter[0] += 1
            await page.screenshot(
                path=os.path.join(artifacts, f"{step}-{counter[0]}-{name}.png"), full_page=True)

        if step == "undo-overwrite":
            await undo_overwrite(page, origin, shot, rest[0])
        elif step == "undo-delete":
            await undo_delete(page, origin, shot, rest[0])
        elif step == "two-people":
            await two_people(browser, page, origin, shot, rest[0])
        else:
            raise SystemExit(f"unknown step {step}")
        await browser.close()
    print("ok")


asyncio.run(main())
