"""The documentation that is generated from code stays true: docs/TRACE_STATS_API.md holds the statistics catalog
as simulator.traces.stats renders it. docs/ sits beside tests/ (in the checkout and in .ci/run's copy)."""
from pathlib import Path

from simulator.traces.stats import catalog_markdown

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_trace_stats_doc_holds_the_catalog_as_the_code_renders_it():
    doc = (DOCS / "TRACE_STATS_API.md").read_text()
    assert catalog_markdown() in doc, "regenerate the table in docs/TRACE_STATS_API.md from catalog_markdown()"
