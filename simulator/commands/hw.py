"""`sparsesim hw list | show NAME`: hardware specs, every number with its source."""
from __future__ import annotations

from simulator.commands._common import UsageError


def register(sub) -> None:
    h = sub.add_parser("hw", help="hardware specs: list, or show NAME with sources")
    h.add_argument("action", choices=["list", "show"])
    h.add_argument("name", nargs="?")
    h.set_defaults(func=cmd_hw)


def _print_sourced(obj_sources: dict[str, str], assumed, values: dict[str, str]) -> None:
    width = max(len(k) for k in values)
    vwidth = max(len(v) for v in values.values())
    for k, v in values.items():
        src = obj_sources.get(k, "")
        mark = " [ASSUMED]" if k in assumed else ""
        print(f"  {k:<{width}}  {v:<{vwidth}}  {src}{mark}")


def cmd_hw(args) -> int:
    from hwmodels.spec import list_hardware, load_hardware

    if args.action == "list" or not args.name:
        if args.action == "show":
            raise UsageError("hw show needs a NAME; see `sparsesim hw list`")
        print(f"{'name':<11} {'units':>10} {'HBM GiB':>8} {'GB/s':>7} {'bf16 TF':>8} {'fp8 TF':>7} {'fp4 TF':>7}  link")
        for n in list_hardware():
            h = load_hardware(n)
            pf = h.peak_flops
            def tf(d):
                return f"{pf[d] / 1e12:.0f}" if d in pf else "-"
            print(f"{h.name:<11} {h.units:>6} {h.unit_name:<3} {h.hbm_capacity_bytes / 2**30:>8.0f} "
                  f"{h.hbm_bw_bytes_s / 1e9:>7.0f} {tf('bf16'):>8} {tf('fp8'):>7} {tf('fp4'):>7}  "
                  f"{h.link_kind} " + (f"{h.link_bw_bytes_s / 1e9:.0f} GB/s" if h.link_bw_bytes_s else "? GB/s") + (f"  (x{h.devices} devices)" if h.devices > 1 else ""))
        return 0
    h = load_hardware(args.name)
    print(f"{h.name}: {h.vendor} {h.architecture} ({h.kind}), {h.devices} device(s) in this spec, up to "
          f"{h.max_devices_per_node} per node   [{h.file}]")
    vals = {
        "compute_units.count": f"{h.units} {h.unit_name}",
        "compute_units.clock_ghz": f"{h.clock_hz / 1e9:.3f} GHz" if h.clock_hz else "unknown",
    }
    for d, v in h.peak_flops.items():
        vals[f"peak_tflops.{d}"] = f"{v / 1e12:,.1f} TFLOP/s"
    vals["memory.hbm.capacity_gib"] = f"{h.hbm_capacity_bytes / 2**30:.1f} GiB"
    vals["memory.hbm.bandwidth_gbps"] = f"{h.hbm_bw_bytes_s / 1e9:,.0f} GB/s"
    if h.ddr_capacity_bytes:
        vals["memory.ddr.capacity_gib"] = f"{h.ddr_capacity_bytes / 2**30:,.0f} GiB"
    if h.ddr_bw_bytes_s:
        vals["memory.ddr.bandwidth_gbps"] = f"{h.ddr_bw_bytes_s / 1e9:,.0f} GB/s"
    if h.smem_per_unit_bytes:
        vals["onchip.smem_per_unit_kib"] = f"{h.smem_per_unit_bytes / 1024:.0f} KiB"
    if h.sram_total_bytes:
        vals["onchip.sram_total_mib"] = f"{h.sram_total_bytes / 2**20:,.1f} MiB"
    if h.l2_bytes is not None:
        vals["onchip.l2_mib"] = f"{h.l2_bytes / 2**20:.1f} MiB"
    vals["launch_overhead_us.eager"] = f"{h.launch_eager_s * 1e6:.1f} us"
    vals["launch_overhead_us.graph"] = f"{h.launch_graph_s * 1e6:.1f} us"
    vals["interconnect.bandwidth_gbps"] = (f"{h.link_bw_bytes_s / 1e9:,.0f} GB/s" if h.link_bw_bytes_s
                                           else "unknown")
    vals["interconnect.latency_us"] = f"{h.link_latency_s * 1e6:.1f} us" if h.link_latency_s else "unknown"
    vals["max_devices_per_node"] = str(h.max_devices_per_node)
    sources, assumed = dict(h.sources), set(h.assumed)
    e = h.efficiency
    if e.launch_graph_s is not None or e.launch_eager_s is not None:
        for k in ("launch_overhead_us.eager", "launch_overhead_us.graph"):
            sources[k] = f"from calibration: {e.source.split(':')[0]}"
            assumed.discard(k)
    if e.link_latency_s is not None:
        vals["interconnect.latency_us"] = f"{e.link_latency_s * 1e6:.1f} us"
        sources["interconnect.latency_us"] = ("from calibration (NCCL measurements, simulator/calibration/fit_links.py; "
                                              "fixed per-collective cost below)")
        assumed.discard("interconnect.latency_us")
    _print_sourced(sources, assumed, vals)
    if "onchip.sram_total_mib" not in h.sources and h.sram_total_bytes:
        print("  (onchip.sram_total_mib derived: smem per unit x units)")
    print(f"  efficiency: {e.source}" + (f"; overlap_p={e.overlap_p:.2f}" if e.overlap_p else ""))
    print("    compute: " + ", ".join(f"{k}={v:g}" for k, v in e.compute.items()))
    print("    memory:  " + ", ".join(f"{k}={v:g}" for k, v in e.memory.items()))
    print("    saturation (units to saturate bandwidth, x SMs): "
          + ", ".join(f"{k}={v:g}" for k, v in e.saturation.items()))
    if any(e.fixed_s.values()):
        print("    fixed us per kernel: " + ", ".join(f"{k}={v * 1e6:.2f}" for k, v in e.fixed_s.items() if v))
    if e.broadcast_copy:
        print("    broadcast copy (kind copy_broadcast, load latency; hwmodels.roofline broadcast_s): "
              + ", ".join(f"{k}={v:g}" for k, v in e.broadcast_copy.items()))
    if e.engine_ar:
        print("    engines' custom all-reduce (vLLM / TensorRT-LLM / SGLang kernels; hwmodels.roofline ENGINE_AR_TERMS, "
              "sources beside them in the fitted file): "
              + ", ".join(f"{k[:-2]}={v * 1e6:.3f} us" for k, v in e.engine_ar.items()))
    if e.engine_ar_rules:
        print("    engines' all-reduce rules (shares; hwmodels.spec ENGINE_AR_RULES, each from the blind grid that judged "
              "it: engine_allreduce_rules_source in the fitted file): "
              + ", ".join(f"{k}={v:g}" for k, v in e.engine_ar_rules.items()))
    if e.loop_iter_s:
        print(f"    latency: paged-scan loop iteration {e.loop_iter_s * 1e6:.2f} us, dependent load DRAM "
              f"{(e.dram_latency_s or 0) * 1e6:.3f} us / L2 {(e.l2_latency_s or 0) * 1e6:.3f} us "
              "(measure_latency.py; the floor of ops with serial_iters)")
    if h.notes:
        print(f"  notes: {h.notes.strip()}")
    return 0


