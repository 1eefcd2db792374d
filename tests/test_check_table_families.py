"""The `calibrate fit` check table prices each SDPA row with the kernel that ran it: the rows kind `attention` is
fitted on (cuDNN, one query row) by the generic model, every other attention row by its backend's kernel family
(issue 15: cuDNN verification -> attn_cudnn_rows, FlashAttention-2 -> attn_fa2)."""
import numpy as np
import pytest

from hwmodels import datafiles as DF
from hwmodels.opkinds import KINDS
from simulator.calibration import fit as F
from simulator.calibration import report as R

H100_CSV = DF.resolve(F.DATA_DIR / "nvidia-h100-80gb-hbm3_2026-11-22.csv")


@pytest.fixture(scope="module")
def h100():
    df = F.load_measurements(H100_CSV)
    hw = F.spec_for(df)
    return df, F.build_ops(df, hw.units)


def _kinds(ops, rows: np.ndarray) -> set[str]:
    return {KINDS[k] for k in np.unique(ops.kind[rows[ops.setting]])}


def test_backend_family_map():
    fam = F.sdpa_family(["cudnn+gqa_native", "flash+gqa_native", "index_select + flash+gqa_native",
                         "efficient+gqa_none", "torch.index_select x2 (K,V)", None])
    assert list(fam) == ["cudnn", "fa2", "fa2", "memeff", "", ""]


def test_attention_fit_rows_stay_generic(h100):
    df, ops = h100
    rows = F.fit_rows(df, "decode_attn")
    assert rows.sum() == 46  # fit + held-out (64 heads) cuDNN one-query-row rows
    kinds = _kinds(ops, rows)
    assert "attention" in kinds and kinds <= {"attention", "elementwise"}   # generic kernel + its combine
    # ... and they are the only rows of kind `attention`: it is the generic model fitted on them
    att = np.zeros(len(df), dtype=bool)
    att[np.unique(ops.setting[ops.kind == KINDS.index("attention")])] = True
    assert (att == rows).all()


def test_other_sdpa_rows_priced_by_their_family(h100):
    df, ops = h100
    fam, kind, backend = df["family"].to_numpy(), df["op_kind"].to_numpy(), df["backend"].to_numpy()
    q = df["q_rows"].to_numpy()
    verify_cudnn = (fam == "decode_attn") & (backend == F.ATTN_BACKEND) & (q > 1)
    assert verify_cudnn.sum() == 138 and "attn_cudnn_rows" in _kinds(ops, verify_cudnn)
    assert _kinds(ops, verify_cudnn) <= {"attn_cudnn_rows", "attn_combine_cudnn"}
    fa2 = (fam == "decode_attn") & (backend == F.CROSS_BACKEND)
    assert fa2.sum() == 184 and _kinds(ops, fa2) == {"attn_fa2", "attn_combine_fa2"}
    gathered = (fam == "paged_attn") & (kind == "attn_gathered")
    assert gathered.sum() == 72 and "attn_fa2" in _kinds(ops, gathered)
    assert _kinds(ops, gathered) <= {"attn_fa2", "attn_combine_fa2"}
    # gather + attention: the paged gather ops stay kind `gather`, the attention is FA2's
    both = (fam == "paged_attn") & (kind == "gather+attn")
    assert {"gather", "attn_fa2"} <= _kinds(ops, both) <= {"gather", "attn_fa2", "attn_combine_fa2"}
    assert _kinds(ops, (fam == "paged_attn") & (kind == "gather")) == {"gather"}


def test_family_rows_read_the_sm_count(h100):
    df, ops = h100
    fewer = F.build_ops(df, 66)   # FA2's / cuDNN's split rules depend on the SM count; the generic model does not
    gen = F.fit_rows(df, "decode_attn")
    fa2 = (df["family"].to_numpy() == "decode_attn") & (df["backend"].to_numpy() == F.CROSS_BACKEND)

    def units(o, rows):
        m = rows[o.setting]
        return o.parallel_units[m]

    assert np.array_equal(units(ops, gen), units(fewer, gen))
    assert not np.array_equal(units(ops, fa2), units(fewer, fa2))


def test_check_table_with_committed_fit():
    err, table, *_ = R.evaluate(H100_CSV)
    t = table.set_index(["group", "part"])["median_ape_pct"]
    # generic model on cuDNN q_rows>1 gave 78.6 %; its own kernel family ~2 %
    assert t[("verify_attn q_rows>1, cuDNN", "held-out")] < 10.0
    assert t[("verify_attn q_rows>1, FA2 cross-check", "held-out")] < 10.0
    assert t[("paged_attn:attn_gathered (FA2)", "held-out")] < 10.0   # generic: 12.9 %
    # the rows kind `attention` is fitted on are priced as before (committed file: 1.0 / 4.0 %)
    assert t[("decode_attn q_rows=1, cuDNN", "fit")] == pytest.approx(1.0, abs=0.1)
    assert t[("decode_attn q_rows=1, cuDNN", "held-out")] == pytest.approx(4.0, abs=0.1)
