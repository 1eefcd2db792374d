"""Price the cold-K/V grid (lab/kernels/measure_attention_cold.py cold_shapes(): every shape in mode 'warm', the
campaign harness, and 'cold', K/V rotated over >= 128 MiB of copies with the metadata warm) BEFORE it is measured:

  pred_base_us  the model at BASE_COMMIT (main's model; its code and fitted file from `git archive`): no notion of the
                L2, the same price for both modes (for a cold row: the price the product pays)
  pred_new_us   this tree's model: the harness's warm K/V share (fit_production_attention harness_kv_l2_hit /
                harness_warm_launches) on 'warm' rows and on the families' warm fit rows (refitted), hit 0 on 'cold'
                rows

Checks that no shape of the grid is in a committed CSV of its family first. Writes
hwmodels/calibration/data/production_attention/attention_cold_predictions.csv with both commits.

Cold grid 2 (--grid 2: cold_shapes2(), FlashInfer's tensor-core decode) is priced once, by this tree's committed model
(the product's price for both modes: no notion of the L2), into attention_cold2_predictions.csv (pred_base_us =
pred_new_us, base_commit = model_commit = HEAD).

Cold grid 3 (--grid 3: cold_shapes3(), fi_tc and fi_verify) is priced by main's model (HEAD: pred_base_us) and by the
candidate on branch cand-lone-tile (CAND3_COMMIT: pred_new_us), both from `git archive`, into
attention_cold3_predictions.csv.

    python lab/kernels/predict_attention_cold.py [--grid 2 | --grid 3]
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from triton_blind_pricing import DATA, ROOT, price_at  # noqa: E402

OUT = DATA / "attention_cold_predictions.csv"
OUT2 = DATA / "attention_cold2_predictions.csv"
OUT3 = DATA / "attention_cold3_predictions.csv"
#: the candidate cold grid 3 judges (branch cand-lone-tile): the fp8 decode tile's exposed load, the fit rerun under it
CAND3_COMMIT = "3dee3d0"
BASE_COMMIT = "ea0997d"
KEYS = ("family", "heads", "kv_heads", "dtype", "batch", "q_rows", "context", "page_size")


def committed_shapes() -> pd.DataFrame:
    out = []
    for p in sorted([*DATA.glob("*.csv"), *DATA.glob("*.csv.gz")]):   # plain or committed gzip-compressed
        if "_grids" in p.name or "predictions" in p.name or "first_look" in p.name or "attention_cold" in p.name:
            continue
        try:
            d = pd.read_csv(p, usecols=lambda c: c in KEYS or c == "family")
        except (ValueError, pd.errors.ParserError):
            continue
        if "family" not in d.columns or not {"batch", "context", "heads"} <= set(d.columns):
            continue
        for c in KEYS:
            if c not in d.columns:
                d[c] = np.nan
        out.append(d[list(KEYS)])
    d = pd.concat(out, ignore_index=True)
    d["q_rows"] = d["q_rows"].fillna(1)
    return d


def grid_rows(shapes: list[dict]) -> tuple[pd.DataFrame, int]:
    """Every shape of a cold grid in both modes (warm, cold) with its warm harness footprint (MB), after checking that
    none is in a committed CSV; with the count of committed rows checked."""
    import measure_attention_cold as M

    g = pd.DataFrame(shapes)
    old = committed_shapes()
    hit = g.merge(old.drop_duplicates(), on=list(KEYS), how="inner")
    if len(hit):
        raise SystemExit(f"{len(hit)} shapes already measured:\n{hit.to_string()}")
    s = pd.concat([g.assign(mode="warm"), g.assign(mode="cold")], ignore_index=True)
    s["head_dim_v"] = pd.to_numeric(s["head_dim_v"], errors="coerce")
    s["warm_footprint_mb"] = [round(M.warm_footprint(r) / 1e6, 2) for r in s.to_dict("records")]
    return s, len(old)


def main() -> None:
    import measure_attention_cold as M

    grid2 = sys.argv[1:] == ["--grid", "2"]
    if sys.argv[1:] == ["--grid", "3"]:
        return main3()

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "simulator", "hwmodels"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        raise SystemExit(f"uncommitted changes under simulator/ hwmodels/: commit the model first\n{dirty}")
    s, n_old = grid_rows(M.cold_shapes2() if grid2 else M.cold_shapes())
    s["pred_new_us"] = np.round(price_at(s, None), 3)
    s.insert(s.columns.get_loc("pred_new_us"), "pred_base_us",
             s["pred_new_us"] if grid2 else np.round(price_at(s, BASE_COMMIT), 3))
    s["base_commit"], s["model_commit"] = (commit[:7] if grid2 else BASE_COMMIT), commit
    s.to_csv(OUT2 if grid2 else OUT, index=False)
    print(f"{len(s)} rows priced at {commit[:10]} (base {s['base_commit'].iloc[0]}), none of {len(s) // 2} shapes in "
          f"{n_old} committed rows -> {OUT2 if grid2 else OUT}")
    print(s.groupby(["family", "role", "mode"])[["pred_base_us", "pred_new_us"]].median().to_string())


def main3() -> None:
    """Cold grid 3: every shape warm and cold, priced by main (HEAD) and by the candidate (CAND3_COMMIT)."""
    import measure_attention_cold as M

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    s, n_old = grid_rows(M.cold_shapes3())
    s["pred_base_us"] = np.round(price_at(s, commit), 3)
    s["pred_new_us"] = np.round(price_at(s, CAND3_COMMIT), 3)
    s["base_commit"], s["model_commit"] = commit, CAND3_COMMIT
    s.to_csv(OUT3, index=False)
    print(f"{len(s)} rows priced by main {commit} and the candidate {CAND3_COMMIT}; none of {len(s) // 2} shapes in "
          f"{n_old} committed rows -> {OUT3}")
    print(s.groupby(["family", "dtype", "mode"])[["pred_base_us", "pred_new_us"]].median().to_string())


if __name__ == "__main__":
    main()
