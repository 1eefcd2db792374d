#!/usr/bin/env python3
"""Open each --html report in headless Chromium and check that it renders: no JavaScript error on the console, every
Plotly figure div drawn (an SVG inside it), no network reference; save a screenshot of each.

    python benchmarks/report_browser_check.py REPORT.html [...] [--shots DIR]
    python benchmarks/report_browser_check.py --make [--shots DIR]     # write the simulate and compare reports
                                                                       #  first (small runs), then check them

Chromium is the distribution's package (Debian: `apt-get install chromium`; /usr/bin/chromium). Each file is loaded
twice: `--dump-dom` (the DOM after the scripts ran, with a virtual-time budget so plotly.js finishes) and
`--screenshot`; the console goes to stderr (`--enable-logging=stderr`), where an uncaught error shows as a CONSOLE
line at level ERROR or as "Uncaught". Prints one line per report and exits 1 if any check failed.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
REAL = ROOT / "hwmodels/calibration/data/serving/vllm_format/hfval_cc4_in2k_nvidia-h100-80gb-hbm3_2026-11-26.json"


def browser() -> str:
    for b in CHROMIUM:
        p = shutil.which(b)
        if p:
            return p
    sys.exit("no Chromium found (Debian: apt-get install chromium)")


def run_chromium(exe: str, url: str, extra: list[str], timeout: int = 120) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as prof:
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", f"--user-data-dir={prof}",
               "--enable-logging=stderr", "--v=0", "--virtual-time-budget=15000", "--no-first-run",
               "--disable-background-networking", *extra, url]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def check(exe: str, path: Path, shots: Path) -> tuple[bool, str]:
    text = path.read_text(encoding="utf-8")
    net = re.findall(r"""<(?:script|link|img)[^>]+(?:src|href)\s*=\s*["']https?://""", text)
    divs_in_file = len(re.findall(r'class="plotly-graph-div"', text))
    url = path.resolve().as_uri()
    dom = run_chromium(exe, url, ["--dump-dom"])
    html = dom.stdout
    errors = [ln for ln in dom.stderr.splitlines() if "CONSOLE" in ln and ("ERROR" in ln or "Uncaught" in ln)]
    errors += [ln for ln in dom.stderr.splitlines() if "Uncaught" in ln and ln not in errors]
    # each figure div, with what follows it up to the next figure div: rendered = it holds plotly's main-svg
    parts = re.split(r'(?=<div[^>]*class="[^"]*plotly-graph-div)', html)[1:]
    rendered = sum(1 for p in parts if "main-svg" in p)
    shot = shots / f"{path.parent.name}_{path.stem}.png"
    run_chromium(exe, url, [f"--screenshot={shot}", "--window-size=1400,2400", "--hide-scrollbars"])
    ok = (not net and not errors and divs_in_file > 0 and len(parts) == divs_in_file and rendered == divs_in_file
          and shot.is_file())
    line = (f"{'OK  ' if ok else 'FAIL'} {path}: {len(text) / 2**20:.1f} MiB, {divs_in_file} plot divs, {rendered} "
            f"rendered (svg drawn), {len(errors)} console errors, {len(net)} network references, screenshot {shot}")
    for e in errors[:5]:
        line += f"\n      {e[:200]}"
    return ok, line


def make_reports(out: Path) -> list[Path]:
    """The simulate and compare reports of small runs (plan's takes minutes: pass its report.html by path)."""
    cmds = [["simulate", "serving_hf_cb_h100", "--out", str(out), "--html"],
            ["compare", str(REAL), "--scenario", "serving_hf_cb_h100", "--out", str(out), "--html"]]
    for c in cmds:
        subprocess.run([sys.executable, "-m", "simulator.cli", *c], check=True, capture_output=True, cwd=ROOT)
    return [out / "serving_hf_cb_h100" / "report.html", out / "compare_serving_hf_cb_h100" / "report.html"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("reports", nargs="*", type=Path)
    ap.add_argument("--make", action="store_true", help="write the simulate and compare reports first")
    ap.add_argument("--shots", type=Path, default=Path("results/report_screenshots"))
    a = ap.parse_args()
    exe = browser()
    ver = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
    a.shots.mkdir(parents=True, exist_ok=True)
    reports = list(a.reports)
    if a.make:
        reports = make_reports(Path(tempfile.mkdtemp(prefix="sparsesim_reports_"))) + reports
    if not reports:
        ap.error("give report files or --make")
    print(f"browser: {ver} ({exe}), headless")
    bad = 0
    for r in reports:
        ok, line = check(exe, r, a.shots)
        bad += not ok
        print(line)
    print(f"{len(reports) - bad}/{len(reports)} reports render without errors")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
