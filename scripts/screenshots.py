"""Screenshots of built pages as a reader sees them: light, dark and a phone's width.

    .venv/bin/python scripts/screenshots.py lesson/02-kv-cache-arithmetic/ [more pages]

Serves site/ on the port of its site_url, waits for the Python runtime, and writes
PNGs to build/screenshots/. Every request off 127.0.0.1 is aborted and reported.
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.browser.conftest import CHROMIUM_FLAGS, SiteServer, built_site_url  # noqa: E402

VIEWS = {"light": ("light", {"width": 1280, "height": 900}), "dark": ("dark", {"width": 1280, "height": 900}),
         "phone": ("light", {"width": 390, "height": 844})}


def main(paths: list[str]) -> int:
    from playwright.sync_api import sync_playwright

    out_dir = os.path.join(ROOT, "build", "screenshots")
    os.makedirs(out_dir, exist_ok=True)
    server = SiteServer(built_site_url())
    server.start()
    external = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"),
                                                 args=CHROMIUM_FLAGS)
            for path in paths:
                for view, (scheme, viewport) in VIEWS.items():
                    context = browser.new_context(color_scheme=scheme, viewport=viewport)
                    context.route("**/*", lambda route: route.continue_() if "127.0.0.1" in route.request.url
                                  or route.request.url.startswith(("data:", "blob:")) else
                                  (external.append(route.request.url), route.abort()))
                    page = context.new_page()
                    page.goto(server.url + path)
                    if page.query_selector("[data-widget]"):
                        page.wait_for_selector("html[data-pyodide=ready]", timeout=120_000)
                    page.wait_for_timeout(1500)
                    name = path.strip("/").replace("/", "_") or "home"
                    target = os.path.join(out_dir, f"{name}-{view}.png")
                    page.screenshot(path=target, full_page=True)
                    print(target)
                    context.close()
            browser.close()
    finally:
        server.stop()
    if external:
        print("requests off 127.0.0.1:", external)
    return 1 if external else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or [""]))
