"""The --html reports are self-contained (plotly.js inlined, no http(s) script/src/href) and hold the expected plot
divs and provenance (the compare report: tests/test_compare.py). Rendering in a real browser (no JS error, every
plot drawn) is checked by benchmarks/report_browser_check.py, whose output is committed."""
import re

from simulator.cli import main


def check_self_contained(path, n_divs, words):
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"""<(?:script|link|img|iframe)[^>]+(?:src|href)\s*=\s*["']https?://""", text)
    head = text[text.index("<script"):text.index("</script>")]
    assert len(head) > 1_000_000 and "plotly" in head, "plotly.js is not inlined in the first script"
    assert len(re.findall(r'<div id="[^"]+" class="plotly-graph-div"', text)) == n_divs
    for w in words:
        assert w in text, w


def test_simulate_report_is_self_contained(tmp_path, capsys):
    sets = ["--set", "serving.requests.closed_loop.count=6", "--set", "serving.requests.output_tokens.fixed=8"]
    assert main(["simulate", "serving_hf_cb_h100", "--out", str(tmp_path), "--html", *sets]) == 0
    check_self_contained(tmp_path / "serving_hf_cb_h100" / "report.html", 3,
                         ["Latency CDFs", "Timeline", "Per-op breakdown of a step", "Provenance", "calibration: H100-SXM",
                          "engine runtime profile: hf-cb"])
    capsys.readouterr()
