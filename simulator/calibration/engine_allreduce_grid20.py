"""Blind grid 20 of the engines' all-reduce kernels: 2 ranks ONLY, the H100 (2 x H100 NVLink), aimed at the two 2-rank cells
grid 19 missed: TensorRT-LLM's Lamport one-shot, plain, 128 KiB-1 MiB (11.2 / 17.0 %, +8.3 % signed: priced too slow in
every grid since 12) and vLLM's one-shot 2-8 MiB (10.9 / 25.4 %, -2.4 % signed: only the p90 failed).

What the looked-at rows say (every engine_allreduce_*h100* measurement at 2 ranks, grids 6-19 and the replicates, hosts
pooled; h100_looked_at_rows20; the cells per run: cells_by_host):
  the Lamport one-shot 128 KiB-1 MiB, 103 rows of 16 runs: 6.0 / 14.8 %, +3.2 % signed pooled; per run the signed median
      runs from -0.4 % to +9.3 % (grids 17-19's hosts +6.6 to +9.3 %), and one shape on two hosts differs by up to 15 %
      (45 x 8192: 6.59 / 5.59 us): mostly host scatter. Against the launch config (flashinfer 0.6.4
      trtllm_allreduce_fusion.cuh @ f1e6fdcb allreduce_fusion_kernel_launcher: threads_per_token = hidden / 8, clusters of
      8 -> 4 -> 2 -> 1 CTAs of >= 128 threads while tokens x cluster > 132 SMs, grid = min(132, tokens x cluster)): one
      token a cluster, ONE 16-byte vector a thread in this regime (ceil(tokens / clusters) = 1 but for > 132 tokens at
      hidden <= 3072), the residual does not follow CTAs, threads a CTA or tokens a cluster (|corr| < 0.04; a least
      squares on time with bytes per CTA or CTAs beside bytes gains < 0.2 % rms): no launch-config structure. What it
      follows is the slope: measured 3.43 us + 3.7 ns / KiB against main's 3.51 us + 3.95 ns / KiB (the push at the own
      kernel's link shares, which fit_production_allreduce fitted with vLLM's PULLS, less lamport_overlap x the phase)
  the source (allreduce_fusion_kernel_oneshot_lamport): each thread posts st.global of its vectors into the peer's
      buffer and its own (no round trip, no barrier), clears the previous call's buffer, then polls its own g slots with
      ld.volatile: at 2 ranks the own slot is its own store, so the poll waits on the ONE peer's push, which runs while
      this rank pushes (both link directions at once) -> lamport2_link (hwmodels.roofline AR_LAMPORT2_LINK): the 2-rank
      Lamport push at its OWN share of the datasheet link rate, fitted with lamport_overlap / lamport_phase2 (grid 17's
      pair, refitted with it)
  vLLM's one-shot 1-8 MiB, 95 rows of 17 runs: 8.5 / 15.9 %, +0.5 % signed pooled (met pooled). A 2-rank link share of
      its own (cross_device_reduce_1stage, vllm_custom_all_reduce.cuh: 36 x 512 threads pull one 16-byte pack each from
      the one peer a grid-stride step) fits to 0.527 of the datasheet rate, what the own kernel's shares price already:
      no rule. The residual is a step just above 1 MiB (1.05-1.6 MB: -16 % signed, the measured time jumps ~3 us from
      1024 to 1032 KiB on some hosts and not on others; the Lamport one-shots show it too, -5 to -8 %: nothing in either
      kernel's source changes there) and a slope too steep at 6-8 MiB (+9 %): host scatter and a harness- or
      platform-side effect, left to the blind grid (rows straddle 1 MiB) -- no candidate rule

    main = the H100 as shipped (GRID19_H100_RULES)
    new  = GRID20_H100_RULES: main + lamport2_link, with lamport_overlap / lamport_phase2 refitted together with it
           (fit_grid20_h100_rules: L-BFGS-B on log time over every looked-at 2-rank plain Lamport row, hosts pooled)
    alt  = GRID20_H100_ALT (named, NOT shipped): the same three fitted on the plain AND + RMSNorm Lamport rows

Both prices committed (BLIND20_PRED_CSV) before lab/kernels/run_engine_allreduce_blind20.sh measures (2 x H100 only: on
H200s it stops at once). Shapes (tokens, hidden) in no earlier grid (earlier_shapes20), every implementation at 2 ranks:
8 <= 64 KiB, 12 at 128 KiB-1 MiB, 12 at 1-8 MiB (5 of them at 1.03-1.5 MiB, just past the step).

Result (one nvidia-h100-x2 call, 2026-11-28 01:45 UTC, 156 rows, 0 WRONG; benchmarks/accuracy_sections/allreduce_grid20.py):
new 9 of 15 regimes as main's 9, pooled |error| 8.26 / 21.28 % against 8.57 / 21.34 % -> SHIPPED by the ship rule (equal
regimes, lower pooled median and p90; ship_grid20), a marginal win inside this host's scatter. Both target cells missed by
both (Lamport 128 KiB-1 MiB 15.0 / 24.1 % against 15.7 / 23.1 %, +8.7 / +9.9 % signed; vLLM 1-8 MiB 15.9 / 27.7 % both):
this host's 1-2.5 MiB one-shot rows are bimodal per call (p20 / p80 up to 40 % apart on the 10 calls a row > 1 MiB gets).
Grid 19's 2-rank cells, in-sample (grid 19's rows are among the fitted ones): 13 of 15 both, 5.58 / 12.82 % -> 5.52 /
13.16 %; the Lamport 128 KiB-1 MiB cell 11.2 / 17.0 % -> 10.9 / 15.3 % (still missed).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

BLIND20_SMALL = ((2, 4608), (5, 2560), (11, 1280), (16, 1536), (7, 4608), (1, 6144), (10, 2048), (4, 3584))
BLIND20_MIDDLE = ((19, 4096), (46, 2048), (13, 8192), (31, 4608), (85, 2048), (47, 5120), (63, 4096), (38, 7168),
                  (117, 2560), (53, 6144), (91, 4096), (102, 4608))
BLIND20_LARGE = ((66, 8192), (135, 4096), (180, 3584), (97, 7168), (290, 2560), (230, 4608), (196, 6144), (355, 5120),
                 (520, 4096), (410, 7168), (740, 5120), (505, 8192))
BLIND20_SHAPES = BLIND20_SMALL + BLIND20_MIDDLE + BLIND20_LARGE
BLIND20_WORLD = 2
#: the committed prediction (H100-SXM only) and the measurement's glob
BLIND20_PRED_CSV = "engine_allreduce_blind20_prediction_H100-SXM_2026-11-28.csv"
BLIND20_MEAS_GLOB = "engine_allreduce_blind20_nvidia-h100*.csv"
#: main's commit (the H100 as shipped, GRID19_H100_RULES) the prediction prices
BLIND20_MAIN_COMMIT = "667a291"
#: the H100's candidate: fit_grid20_h100_rules()["new"] as committed before grid 20 was measured
GRID20_H100_RULES = {"first_fill_extra": 0.57, "lamport_overlap": 0.1311, "lamport_phase2": 0.9128, "twoshot2_link": 0.533,
                     "oneshot_peer_share": 0.0228, "lamport2_link": 0.5266}
#: named before measuring, NOT shipped whatever grid 20 says: the three fitted on plain + RMSNorm Lamport rows
GRID20_H100_ALT = {"first_fill_extra": 0.57, "lamport_overlap": 0.1929, "lamport_phase2": 0.9418, "twoshot2_link": 0.533,
                   "oneshot_peer_share": 0.0228, "lamport2_link": 0.5164}
#: the target cells (implementation, size regime) and the file names that mark an H100 measurement
TARGETS = (("trtllm_ar_oneshot", "b middle (128 KiB-1 MiB)"), ("vllm_oneshot", "c large (2-8 MiB)"))
H100_GLOB = "engine_allreduce_*h100*.csv*"


def earlier_shapes20() -> set:
    """Every (tokens, hidden) an earlier grid measured (campaign, blind 4, 6-19)."""
    from simulator.calibration import engine_allreduce_grid19 as G19

    return G19.earlier_shapes19() | set(G19.BLIND19_SHAPES) | set(G19.BLIND19_CONTROL)


def blind20_grid() -> pd.DataFrame:
    """Blind grid 20's rows: BLIND20_SHAPES at 2 ranks (lab/kernels/measure_engine_allreduce.py --grid blind20)."""
    from simulator.calibration import engine_allreduce as EA

    return EA.grid((BLIND20_WORLD,), list(BLIND20_SHAPES))


def h100_looked_at_rows20(world: int = 2, data_dir: Path | None = None, names=None) -> pd.DataFrame:
    """Every measured H100 row of the engines' kernels at `world` ranks (H100_GLOB: every host, grids 6-19 and the
    replicates; predictions, grid 20 and WRONG rows left out), with the file it came from; `names` keeps only those
    files (lab/kernels/data_order.py committed_before: the rows grid 20's fit saw; later files match the glob too)."""
    from simulator.calibration.engine_allreduce_grid17 import h100_looked_at_rows

    return h100_looked_at_rows(world=world, data_dir=data_dir, names=names, exclude="blind20")


def fit_grid20_h100_rules(rows: pd.DataFrame | None = None, held: dict | None = None) -> dict:
    """GRID20_H100_RULES / _ALT from the looked-at 2-rank H100 rows, the H100's shipped rules held but for
    (lamport_overlap, lamport_phase2, lamport2_link), fitted together (L-BFGS-B on log time, bounds [0, 1] / [0, 1] /
    [0.2, 1]) over the plain Lamport one-shot rows (new) or the plain + RMSNorm ones (alt); the other rules held at
    `held` (default: the H100 as shipped when grid 20 was priced, GRID19_H100_RULES)."""
    from scipy.optimize import minimize

    from hwmodels.spec import load_hardware
    from simulator.calibration.engine_allreduce_grid16 import with_rules

    h = load_hardware("H100-SXM")
    if held is None:
        from simulator.calibration.engine_allreduce_grid19 import GRID19_H100_RULES as held
    base = dict(held)
    v = h100_looked_at_rows20() if rows is None else rows
    out = {}
    for name, impls in (("new", ("trtllm_ar_oneshot",)), ("alt", ("trtllm_ar_oneshot", "trtllm_arnorm_oneshot"))):
        lam = v[v["impl"].isin(impls)].reset_index(drop=True)
        y = np.log(lam["median_us"].to_numpy(float))

        def f(x, lam=lam, y=y):
            rr = {**base, "lamport_overlap": x[0], "lamport_phase2": x[1], "lamport2_link": x[2]}
            return float(np.sum((np.log(np.maximum(predict(lam, with_rules(h, rr)), 1e-3)) - y) ** 2))
        q = minimize(f, [base.get("lamport_overlap", 0.1), base.get("lamport_phase2", 0.9), 0.55],
                     bounds=[(0.0, 1.0), (0.0, 1.0), (0.2, 1.0)], method="L-BFGS-B",
                     options={"eps": 1e-4, "ftol": 1e-12})
        out[name] = {**base, "lamport_overlap": round(float(q.x[0]), 4), "lamport_phase2": round(float(q.x[1]), 4),
                     "lamport2_link": round(float(q.x[2]), 4)}
        out[f"{name}_rows"] = len(lam)
    return out


def predict(df: pd.DataFrame, hw) -> np.ndarray:
    from simulator.calibration import engine_allreduce as EA

    return EA.predict_us(df, hw)


def candidates() -> dict:
    """name -> the H100 as priced: main (GRID19_H100_RULES, as shipped), new (GRID20_H100_RULES), alt (GRID20_H100_ALT)."""
    from hwmodels.spec import load_hardware
    from simulator.calibration.engine_allreduce_grid16 import with_rules
    from simulator.calibration.engine_allreduce_grid19 import GRID19_H100_RULES

    h = load_hardware("H100-SXM")
    return {"main": with_rules(h, GRID19_H100_RULES), "new": with_rules(h, GRID20_H100_RULES),
            "alt": with_rules(h, GRID20_H100_ALT)}


def blind20_prediction(out: str | Path, model_commit: str) -> pd.DataFrame:
    """Write blind grid 20's prediction BEFORE it is measured: pred_main_us (the H100 as shipped at BLIND20_MAIN_COMMIT,
    GRID19_H100_RULES), pred_new_us (GRID20_H100_RULES, the shipping candidate), pred_alt_us (GRID20_H100_ALT, named,
    not shipped)."""
    from simulator.calibration.engine_allreduce_grid19 import GRID19_H100_RULES, write_rules_prediction

    return write_rules_prediction(out, blind20_grid(), candidates(), model_commit, BLIND20_MAIN_COMMIT,
                                  {"main": GRID19_H100_RULES, "new": GRID20_H100_RULES, "alt": GRID20_H100_ALT})


def write_rules(out_dir: Path, rules: dict, source: str) -> Path:
    """Merge `rules` into out_dir/H100-SXM.yaml as engine_allreduce_rules ONLY (engine_allreduce_grid16.write_rules)."""
    from simulator.calibration.engine_allreduce_grid16 import write_rules as w16

    return w16(out_dir, "H100-SXM", rules, source)


def cells_by_host(data_dir: Path | None = None, include_blind20: bool = True) -> pd.DataFrame:
    """The two target cells per H100 run (every looked-at 2-rank file, then grid 20's): n, measured median us, main's
    (GRID19_H100_RULES) and new's (GRID20_H100_RULES) |error| median / p90 and signed median, %."""
    from hwmodels import datafiles as DF
    from hwmodels.spec import load_hardware
    from simulator.calibration import engine_allreduce as EA
    from simulator.calibration.engine_allreduce_grid16 import with_rules
    from simulator.calibration.engine_allreduce_grid19 import GRID19_H100_RULES

    d = EA.DATA_DIR if data_dir is None else data_dir
    v = h100_looked_at_rows20(data_dir=d)
    if include_blind20:
        for p in DF.glob(d, BLIND20_MEAS_GLOB):
            m = pd.read_csv(p)
            m = m[~m["note"].astype("string").fillna("").str.contains("WRONG") & (m["world"] == 2)]
            v = pd.concat([v, m.assign(file=Path(p).name)], ignore_index=True)
    v["regime"] = EA.size_regime(v["bytes"])
    h = load_hardware("H100-SXM")
    for name, rules in (("main", GRID19_H100_RULES), ("new", GRID20_H100_RULES)):
        v[f"err_{name}"] = 100 * (predict(v, with_rules(h, rules)) / v["median_us"] - 1)
    rows = []
    for impl, reg in TARGETS:
        c = v[(v["impl"] == impl) & (v["regime"] == reg)]
        for f, t in c.groupby("file", sort=False):
            row = {"cell": f"{impl} {reg[:1]}", "run": f.replace("engine_allreduce_", "").replace(
                "_nvidia-h100-80gb-hbm3", "").split("_20")[0] + (" (blind)" if "blind20" in f else ""),
                "n": len(t), "meas_us": t["median_us"].median()}
            for name in ("main", "new"):
                e = t[f"err_{name}"]
                row.update({f"{name}_med": e.abs().median(), f"{name}_p90": e.abs().quantile(0.9),
                            f"{name}_signed": e.median()})
            rows.append(row)
    return pd.DataFrame(rows)


#: the commit that holds blind grid 20's prediction (BLIND20_PRED_CSV), made before the measurement
BLIND20_PRED_COMMIT = "9695459"
#: the shipped rules' source line in H100-SXM.yaml (engine_allreduce_rules_source)
GRID20_SOURCE = ("simulator/calibration/engine_allreduce_grid20.py write_rules: GRID20_H100_RULES (grid 19's rules kept; "
                 "lamport2_link with lamport_overlap / lamport_phase2 by fit_grid20_h100_rules on every looked-at 2-rank "
                 "plain Lamport H100 row, 293 rows of 16 runs on several hosts, committed 9695459 before grid 20 ran), "
                 "judged blind on 2 x H100 (2026-11-28 01:45 UTC, 156 rows, 2 ranks only): 9 of 15 regimes as main's 9, "
                 "pooled 8.26 / 21.28 % against 8.57 / 21.34 % (shipped by the ship rule: equal regimes, lower pooled "
                 "median and p90; a marginal win on a noisy host)")


def ship_grid20(out_dir: Path | None = None) -> Path:
    """Write GRID20_H100_RULES into the fitted H100-SXM.yaml (engine_allreduce_rules only), as shipped after grid 20."""
    d = Path(__file__).resolve().parents[2] / "hwmodels" / "calibration" / "fitted" if out_dir is None else Path(out_dir)
    return write_rules(d, GRID20_H100_RULES, GRID20_SOURCE)
