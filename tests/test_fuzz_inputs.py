"""Fuzzing the user-facing inputs (tests/fuzz_cases.py): scenario files, strategy parameters, hardware specs,
model files, YAML itself and command lines. Every bad input must stop with exit status 2 and one line that
names the file (and the field, where one is at fault); no traceback; nothing bad silently accepted; every
legal edge case must run."""
import contextlib
import io
import os
from collections import Counter

import pytest

from tests.fuzz_cases import all_cases, classify

CASES = all_cases()


def run_case(case, folder):
    from simulator.cli import main

    for rel, data in case.files.items():
        p = folder / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    err = io.StringIO()
    crashed = False
    old = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                rc = main(case.argv)
            except SystemExit as e:  # argparse usage errors
                rc = e.code if isinstance(e.code, int) else 2
            except Exception as e:  # noqa: BLE001 - a crash is what we look for
                crashed = True
                rc = None
                err.write(f"Traceback (most recent call last): {type(e).__name__}: {e}\n")
    finally:
        os.chdir(old)
    return classify(case, rc, err.getvalue(), crashed)


def test_enough_cases():
    kinds = Counter(("param" if "param" in c.tags else "spec" if "spec" in c.tags else "model" if "model" in c.tags
                     else "cli" if "cli" in c.tags else "scenario") for c in CASES)
    assert len(CASES) >= 300, kinds
    assert min(kinds.values()) >= 10, kinds


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fuzz_case(case, tmp_path):
    outcome, why = run_case(case, tmp_path)
    expected = "ok" if case.expect == "ok" else "clean"
    assert outcome == expected, f"{case.name}: {outcome}: {why}"
