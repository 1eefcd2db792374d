"""A measured HF transformers decode step (hwmodels/calibration/measure_hf_decode.py) against the simulator.

Prints, per committed hf_decode_*.csv and per (attention implementation, batch, context >= 32K), the
measured step and the simulator's step for the same setting priced as HF runs it: eager launches,
unfused kernels, and for 'eager' attention K/V expanded to every query head (`dense: {gqa_expand:
repeat_kv}`). Then the attention share of the measured step, bounded from below by subtracting the
largest plausible attention-free GPU time (the simulator's non-attention ops), to set against the SSV
document's "attention is 97.20 % of each decoding step at 64K".

    python benchmarks/hf_decode_check.py
"""
from __future__ import annotations

import pandas as pd

from hwmodels.calibration.fit import DATA_DIR, DEVICE_SPECS
from simulator.combo import make_combo
from simulator.pricing import price_combo


def main() -> None:
    for f in sorted(DATA_DIR.glob("hf_decode_*.csv")):
        df = pd.read_csv(f)
        df = df[df["median_ms"].notna() & (df["context"] >= 32768)]
        hw = DEVICE_SPECS[df["device"].iloc[0]]
        print(f"== {f.name} ({hw}, transformers {df['transformers_version'].iloc[0]})")
        print(f"{'impl':6s} {'B':>3s} {'context':>8s} {'measured':>9s} {'simulated':>9s} {'ratio':>6s} "
              f"{'sim. non-attn':>13s} {'attn share >=':>13s}")
        for _, r in df.iterrows():
            ge = "repeat_kv" if r["attn_implementation"] == "eager" else "native"
            c = make_combo(hw, "Llama-3.1-8B", launch="eager", kernels="unfused",
                           attention={"dense": {"gqa_expand": ge}})
            cols, bd = price_combo(c, [float(r["batch"])], [float(r["context"])], [1.0], breakdown=True)
            sim = float(cols["step_ms"][0])
            non_attn = float(bd[~bd["op"].str.startswith("attention")]["time_ms"].sum())
            share = max(0.0, (r["median_ms"] - non_attn) / r["median_ms"])
            print(f"{r['attn_implementation']:6s} {int(r['batch']):3d} {int(r['context']):8d} {r['median_ms']:9.1f} "
                  f"{sim:9.1f} {sim / r['median_ms']:6.2f} {non_attn:13.1f} {share:13.1%}")
        print("(the simulator prices neither HF's DynamicCache torch.cat of every layer's cache per step nor the "
              "efficiency of eager attention's batched matmuls: the ratio column shows what that leaves out)")


if __name__ == "__main__":
    main()
