"""Screenshots of the engine report's views for the docs (docs/images/report-*.png): the report
of Magika's trained model (the demo's, shipped in its wheel) with onnxruntime's profile beside
ours, and the Diff view of that model built with and without mini-infer-cpu-native, opened in
Debian's chromium through Playwright.

    .venv/bin/python scripts/report_screenshots.py [OUT_DIR]   (default: docs/images)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    from playwright.sync_api import sync_playwright

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "images"
    out.mkdir(parents=True, exist_ok=True)
    model = subprocess.run([sys.executable, str(ROOT / "scripts" / "identify_files.py"),
                            "--model"], check=True, capture_output=True, text=True).stdout.strip()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("report_screenshots.py: chromium is not installed (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "report.html"
        subprocess.run([str(Path(sys.executable).parent / "mini-infer"), "report", model, "-o",
                        str(html), "--compare", "onnxruntime"], check=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(html.as_uri())
            page.wait_for_function("window.miReport && window.miReport.ready")
            page.fill("#search", "Conv")
            page.screenshot(path=str(out / "report-graph.png"))
            for view in ("latency", "memory", "build"):
                page.click(f"nav button[data-view={view}]")
                if view in ("latency", "memory"):
                    page.wait_for_function(f"window.miReport.rendered.{view} === true")
                page.screenshot(path=str(out / f"report-{view}.png"))
            # the Diff view: the same model built with and without the compiled kernels
            cli = str(Path(sys.executable).parent / "mini-infer")
            a, b, diff = (Path(tmp) / n for n in ("a.engine", "b.engine", "diff.html"))
            subprocess.run([cli, "build", model, "-o", str(a)], check=True)
            subprocess.run([cli, "build", model, "-o", str(b), "-p", "no:mini-infer-cpu-native"],
                           check=True)
            subprocess.run([cli, "report", str(a), "-o", str(diff), "--diff", str(b),
                            "--no-profile"], check=True)
            page.goto(diff.as_uri())
            page.wait_for_function("window.miReport && window.miReport.ready")
            page.click("nav button[data-view=diff]")
            page.screenshot(path=str(out / "report-diff.png"))
            browser.close()
    print(f"wrote {', '.join(sorted(p.name for p in out.glob('report-*.png')))} in {out}")


if __name__ == "__main__":
    main()
