"""Drives `agent serve`'s page in the distribution's Chromium, headless, with Playwright for
Python (never a browser of Playwright's own: the executable is passed in).

argv: CHROMIUM BASE_URL TOKEN SESSION SCREENSHOT_DIR. Prints one JSON summary on stdout; each
step's screenshot is kept in SCREENSHOT_DIR.
"""

import json
import sys

from playwright.sync_api import expect, sync_playwright

chromium, base, token, session, shots = sys.argv[1:6]
summary = {}

with sync_playwright() as playwright:
    # Tests reach loopback only: every name but the page's address resolves to nothing, and any
    # request Chromium makes of its own (updates, safe browsing) goes to a closed loopback port.
    browser = playwright.chromium.launch(
        executable_path=chromium,
        headless=True,
        args=[
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "--proxy-server=http://127.0.0.1:9",
        ],
    )
    page = browser.new_page()
    expect.set_options(timeout=30_000)

    # Without a token the page asks for one, instead of waiting for answers that never come.
    page.goto(base + "/")
    expect(page.locator("#tokenbox")).to_be_visible()
    expect(page.locator("#main")).to_be_hidden()
    page.screenshot(path=f"{shots}/1-asks-for-the-token.png")
    page.fill("#token", "not-the-token")
    page.click("#tokenform button")
    expect(page.locator("#tokenerror")).to_contain_text("refused")
    summary["asked_for_token"] = True

    # With it (in the fragment, which the browser never sends), the session opens.
    page.goto(f"{base}/?session={session}#token={token}")
    expect(page.locator("#main")).to_be_visible()
    page.fill("#prompt", "fix a.txt and check it")
    page.click("#sendbutton")

    # The streamed answer, with its Markdown rendered, and the edit's diff.
    expect(page.locator(".answer strong").first).to_have_text("fix")
    expect(page.locator(".diff .del").first).to_have_text("-old")
    expect(page.locator(".diff .add").first).to_have_text("+new")
    page.screenshot(path=f"{shots}/2-answer-and-diff.png")
    page.locator(".approval button", has_text="Approve").first.click()

    # The command asks next; approving it runs it.
    command = page.locator(".tool", has_text="echo ran")
    expect(command.locator(".approval button", has_text="Approve")).to_be_visible()
    page.screenshot(path=f"{shots}/3-command-asks.png")
    command.locator(".approval button", has_text="Approve").click()
    expect(page.locator("#state")).to_have_text("done")
    expect(page.locator(".answer").last).to_contain_text("All done.")
    page.screenshot(path=f"{shots}/4-done.png")
    summary["tools_ok"] = page.locator(".tool.ok").count()
    summary["checkpoints"] = page.locator("#checkpoints").inner_text()
    browser.close()

print(json.dumps(summary))
