"""One representative input of each robustness class (tests/fuzz_classes.py), run in process; the whole set runs
through `python benchmarks/fuzz_report.py` (each case in its own process under a memory cap). Plus the two
mechanisms no single input shows: the post-pricing sanity check and progress lines off a terminal."""
import contextlib
import io
import os

import numpy as np
import pytest

from tests.fuzz_classes import class_cases, classify_class

REPRESENTATIVES = ["size_hw_show_zero", "size_eagle3_unpruned_12x6", "crossfield_mla_block_on_mha",
                   "crossfield_renamed_copy_warns", "trace_ok_tree_spec_without_k_info", "trace_draft_model_number_info",
                   "calib_fit_regimes_three_rows", "list_fa2_varlen_flashinfer", "misc_hardware_twice_among_three",
                   "misc_scheduler_garbage", "exitcode_sweep_nothing_priced", "exitcode_help_states_statuses"]
CASES = {c.name: c for c in class_cases()}


def run_case(case, folder):
    from simulator.cli import main

    for rel, data in case.files.items():
        p = folder / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    for rel, target in case.links.items():
        os.symlink(target, folder / rel)
    kept = {rel: (folder / rel).read_bytes() for rel in case.keep}
    err, out = io.StringIO(), io.StringIO()
    old = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                rc = main(case.argv)
            except SystemExit as e:  # argparse usage errors and --help
                rc = e.code if isinstance(e.code, int) else 2
            except Exception as e:  # noqa: BLE001 - a crash is what we look for
                rc = None
                err.write(f"Traceback (most recent call last): {type(e).__name__}: {e}\n")
    finally:
        os.chdir(old)
    return classify_class(case, rc, out.getvalue(), err.getvalue(), folder, kept)


def test_every_class_has_cases():
    from tests.fuzz_classes import CLASSES

    have = {c.cls for c in CASES.values()}
    assert have == set(CLASSES), have
    assert all(sum(c.cls == k for c in CASES.values()) >= 5 for k in CLASSES)


@pytest.mark.parametrize("name", REPRESENTATIVES)
def test_representative(name, tmp_path):
    case = CASES[name]
    outcome, why = run_case(case, tmp_path)
    assert outcome == ("clean" if case.expect in ("error", "nofit") else "ok"), f"{name}: {outcome}: {why}"


def test_post_pricing_check_names_the_inputs():
    """A NaN time, or less arithmetic at a larger batch, stops with the hardware and model files named."""
    from hwmodels.errors import SparsesimError
    from simulator.combo import make_combo
    from simulator.planner import check_priced

    c = make_combo("H100-SXM", "Llama-3.1-8B")
    cols = {"batch": np.array([1, 8]), "context": np.array([4096, 4096]), "output_tokens": np.array([16, 16]),
            "step_ms": np.array([6.0, 7.0]), "tpot_ms": np.array([6.0, 7.0]), "tokens_per_s": np.array([160.0, 1100]),
            "ttft_ms": np.array([30.0, 200.0]), "kv_bytes_per_seq": np.array([5e8, 5e8]),
            "tokens_per_round": np.array([1.0, 1.0]), "flops_per_step": np.array([1.6e10, 1.3e11]),
            "bytes_per_step": np.array([1.6e10, 1.7e10])}
    check_priced(cols, np.zeros(2, dtype=np.int64), [c])
    with pytest.raises(SparsesimError, match=r"H100-SXM \(.*H100-SXM.yaml\) x Llama-3.1-8B.*tpot_ms = nan"):
        check_priced({**cols, "tpot_ms": np.array([np.nan, 7.0])}, np.zeros(2, dtype=np.int64), [c])
    with pytest.raises(SparsesimError, match="flops_per_step .* at batch 1 but .* at the larger batch 8"):
        check_priced({**cols, "flops_per_step": np.array([1.6e10, 1.2e10])}, np.zeros(2, dtype=np.int64), [c])


def test_progress_lines_off_a_terminal(monkeypatch):
    """No line for short work; one every `every_s` for long work, and a last one."""
    from simulator.progress import LineProgress

    clock = [0.0]
    monkeypatch.setattr("simulator.progress.time.monotonic", lambda: clock[0])
    s = io.StringIO()
    p = LineProgress(100, "pricing", "tuple", every_s=5.0, stream=s)
    p.update(10)
    clock[0] = 1.0
    p.close()
    assert s.getvalue() == ""
    p = LineProgress(100, "pricing", "tuple", every_s=5.0, stream=s)
    for _ in range(10):
        clock[0] += 2.0
        p.update(10)
    p.close()
    lines = s.getvalue().splitlines()
    assert len(lines) == 4 and lines[0].startswith("sparsesim: pricing: 30/100 tuples (30 %), 6 s elapsed")
    assert lines[-1].endswith("done")
