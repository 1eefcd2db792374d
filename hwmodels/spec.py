"""HardwareSpec: what one device (or one node of identical devices) can do, loaded from `specs/<name>.yaml`.

Every number in a spec file is written `{value: X, source: "..."}`; the loader keeps the source next to the
value (`spec.sources[field]`) and the set of fields whose value is an assumption (`spec.assumed`). Units in
the YAML are the datasheet's (GiB, GB/s, KiB, MiB, GHz, TFLOP/s, us); inside the code everything is SI
(bytes, bytes/s, Hz, FLOP/s, s).

Efficiency parameters (how much of each peak real kernels reach) are not in the spec file: they default to
1.0 (pure datasheet roofline) and are replaced by `calibration/fitted/<name>.yaml` when that file exists,
or by the fitted file of the device named in the spec's optional `calibration_from:` field.
"""
from __future__ import annotations

import functools
import math
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hwmodels.errors import SparsesimError, SpecError
from hwmodels.opkinds import DTYPE_FALLBACK, DTYPES, KINDS
from hwmodels.yamlio import file_stamp, load_yaml, named_file

SPEC_DIR = Path(__file__).parent / "specs"
#: the fitted efficiency files shipped with the package (hwmodels/calibration/fitted/<device>.yaml)
FITTED_DIR = Path(__file__).parent / "calibration" / "fitted"
#: environment variable naming extra folders of fitted files (os.pathsep-separated), searched before the
#: shipped ones: where `sparsesim calibrate fit --fitted-dir DIR` wrote a user's own fit
FITTED_ENV = "SPARSESIM_FITTED_DIR"


def fitted_dirs() -> list[Path]:
    """Folders searched for `<device>.yaml` fitted files, first match wins: $SPARSESIM_FITTED_DIR's
    entries in order, then the shipped FITTED_DIR."""
    extra = [Path(p) for p in os.environ.get(FITTED_ENV, "").split(os.pathsep) if p.strip()]
    return extra + [FITTED_DIR]


def fitted_file(device_name: str) -> Path | None:
    """The fitted file used for `device_name` (see fitted_dirs), or None when no folder has one."""
    for d in fitted_dirs():
        p = d / f"{device_name}.yaml"
        if p.is_file():
            return p
    return None

ARCHITECTURES = ("hopper", "blackwell", "ampere", "ada", "rdu")
DEVICE_KINDS = ("gpu", "dataflow")
LINK_KINDS = ("nvlink3", "nvlink4", "nvlink5", "pcie4", "pcie5", "p2p")
PEAK_DTYPES = ("fp32", "bf16", "fp16", "fp8", "fp4", "int8")

GIB = 1024**3
MIB = 1024**2
KIB = 1024

#: Upper bounds of physical plausibility per spec field (in the file's units), checked on load: a value
#: beyond them is a unit mistake or a typo (3.35e6 GB/s for 3.35 TB/s), never a device. They are 10-1000x
#: above today's largest devices (B200: 8 TB/s, 192 GB, 2.25 PFLOP/s bf16 dense; SN40L: 1,040 PCUs).
PLAUSIBLE_MAX = {
    "max_devices_per_node": 1024, "compute_units.count": 1e5, "compute_units.clock_ghz": 10.0,
    "peak_tflops": 1e6, "memory.hbm.capacity_gib": 1e5, "memory.hbm.bandwidth_gbps": 1e6,
    "memory.ddr.capacity_gib": 1e7, "memory.ddr.bandwidth_gbps": 1e6, "onchip.smem_per_unit_kib": 1e5,
    "onchip.sram_total_mib": 1e6, "onchip.l2_mib": 1e5, "launch_overhead_us": 1e4,
    "interconnect.bandwidth_gbps": 1e6, "interconnect.latency_us": 1e4,
}


#: Every key a spec file may hold: nested mappings, and the leaves written {value, source[, assumed]} (VALUE) or
#: as plain text / numbers (None). A key outside it is refused, as model files refuse theirs: a misspelled
#: optional key (onchip.l2_mb) would otherwise silently switch its model off.
VALUE = "value"
SPEC_KEYS: dict = {
    "name": None, "vendor": None, "architecture": None, "kind": None, "devices": None, "notes": None,
    "calibration_from": None, "max_devices_per_node": VALUE,
    "compute_units": {"name": None, "count": VALUE, "clock_ghz": VALUE},
    "peak_tflops": {d: VALUE for d in PEAK_DTYPES},
    "memory": {"hbm": {"capacity_gib": VALUE, "bandwidth_gbps": VALUE},
               "ddr": {"capacity_gib": VALUE, "bandwidth_gbps": VALUE}},
    "onchip": {"smem_per_unit_kib": VALUE, "sram_total_mib": VALUE, "l2_mib": VALUE},
    "launch_overhead_us": {"eager": VALUE, "graph": VALUE},
    "interconnect": {"kind": None, "bandwidth_gbps": VALUE, "latency_us": VALUE},
}
VALUE_KEYS = ("value", "source", "assumed")
#: fields whose value counts whole things (SMs, devices): a fraction is a mistake, never truncated
INTEGER_FIELDS = ("compute_units.count", "max_devices_per_node")
#: a device name (and calibration_from) is also a file name (<fitted dir>/<name>.yaml): no path separators
_DEVICE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$")


def _check_keys(doc: dict, schema: dict, file: str, prefix: str = "") -> None:
    """Refuse keys the schema does not know, naming the mapping and listing what it allows."""
    for k, v in doc.items():
        path = f"{prefix}{k}"
        if k not in schema:
            what = "dtype" if prefix == "peak_tflops." else "key"
            raise SpecError(f"unknown {what} {k!r}; allowed here: {', '.join(schema)}", file=file,
                            field=prefix[:-1] or None)
        sub = schema[k]
        if isinstance(sub, dict) and isinstance(v, dict):
            _check_keys(v, sub, file, path + ".")
        elif sub == VALUE and isinstance(v, dict):
            extra = [x for x in v if x not in VALUE_KEYS]
            if extra:
                raise SpecError(f"unknown key(s) {extra} in a {{value, source, assumed}} entry", file=file, field=path)
            if "assumed" in v and not isinstance(v["assumed"], bool):
                raise SpecError(f"assumed must be true or false, got {v['assumed']!r}", file=file, field=path)


def _plausible_max(path: str) -> float:
    return PLAUSIBLE_MAX.get(path, PLAUSIBLE_MAX.get(path.split(".")[0], math.inf))


@dataclass(frozen=True)
class Efficiency:
    """Fractions of the datasheet peaks that kernels reach; 1.0 everywhere until calibrated.

    compute[kind]: achieved / peak FLOP/s for a kernel of that kind that fills the device.
    memory[kind]:  achieved / peak bytes/s for a kernel of that kind that fills the device.
    compute_dtype[dtype]: a further factor on compute[kind] for arithmetic in that dtype (fp8 GEMMs
        reach a smaller share of their peak than bf16 ones); 1.0 when not given.
    fixed_s[kind]: time every kernel of that kind spends beyond its roofline term (ramp-up, tail,
        grid-wide synchronization), in seconds; 0 uncalibrated.
    sync_s[kind]: latency of one synchronized phase inside a kernel (an op's `sync_steps`), in seconds;
        0 uncalibrated.
    saturation[kind]: parallel units (CTAs), as a multiple of the device's compute units, that a kernel
        of that kind must run to reach its full memory bandwidth. 1.0 = bandwidth grows linearly with
        occupied units up to one per SM (the uncalibrated default); below 1: a few deeply pipelined CTAs
        saturate the memory system (split-KV attention); above 1: each CTA keeps little in flight, so
        several per SM are needed (one-block-per-row kernels).
    overlap_p: how a kernel overlaps its compute and memory time: device time = (c^p + m^p)^(1/p);
        None = perfect overlap, max(c, m) (the plain roofline). A fitted p (typically 2-4) rounds the
        roofline's corner where real kernels are slower than either bound alone.
    l2_fraction: share of the L2 that re-read data can occupy before it is evicted (1.0 uncalibrated).
    link_ceiling[kind]: achieved / datasheet link bandwidth that the traffic from every peer together reaches (the
        custom all-reduce kinds, hwmodels.roofline); absent = memory[kind], the one-peer rate, is also the ceiling.
    link_latency_s: measured latency per collective step, replacing the spec's (None = keep the spec's);
        the achieved link bandwidth is memory[collective] / memory[alltoall] times the spec's bandwidth and
        a collective's fixed software cost is fixed_s[collective] / fixed_s[alltoall].
    launch_graph_s / launch_eager_s: measured launch costs that replace the spec's assumed ones (None =
        keep the spec's).
    loop_iter_s: time of one iteration of a synchronous paged-scan loop (one CTA of 256 threads issues
        one round of 16-B loads, ~32 KiB, through a block table and waits for them before computing),
        measured by lab/measure_latency.py (page_scan) at low occupancy; an op's
        `serial_iters` times this is a floor on its device time. None = uncalibrated: no such floor.
    dram_latency_s / l2_latency_s: measured dependent-load (pointer-chase) latency of device memory and
        of L2, for reference and reports (the floor above is measured directly, not built from these).
    cta_slots[kind]: CTAs of a kernel of that kind resident on one SM at a time (its occupancy); when given,
        the roofline prices the kind in waves of units x cta_slots CTAs (hwmodels.roofline `waves`): each CTA
        walks its work in the op's `serial_iters` iterations of iter_s[kind], so a kernel of few CTAs runs one
        long serial chain per CTA and a last partial wave costs a whole chain (the tail). Absent = the
        continuous occupancy term (fill_m) only.
    iter_s[kind]: time of one synchronous load-then-compute iteration of a kernel of that kind (one CTA's
        K/V tile for decode attention), in seconds.
    cta_fixed_s[kind]: time each wave of CTAs spends outside its streaming loop (loading Q, initializing,
        reducing and writing its partial output), in seconds; counted once per wave.
    wave_fixed_s[kind]: the fixed time (ramp / tail) of the kind's kernels that the wave model prices (ops with
        parallel_units under a cta_slots[kind]), in seconds, where it differs from fixed_s[kind]: cuBLASLt's small-M
        GEMM kernels (kinds gemm / gemm_fp8 on the H100, simulator.kernels.cublaslt) are other kernels than the
        full-device GEMMs fixed_s[gemm] was fitted on. Absent = fixed_s[kind].
    cta_serial_s[kind]: time each CTA adds on its SM that co-resident CTAs do not overlap (launch, prologue and
        epilogue of a small CTA), in seconds; counted ceil(CTAs / SMs) times (the Triton decode
        kernel of lab/measure_regimes.py at one or two K/V tiles per CTA costs ~1 us more per CTA per SM, MEASURED 8 to 2048 CTAs,
        regimes_*_v4.csv short corner); absent = 0.
    chain_queue[kind]: the share of a launch's HBM streaming time that a latency-bound program's chain of dependent
        loads spends queued in the memory system (hwmodels.roofline CHAIN_ISSUE: a wave costs max(memory, chain +
        compute + chain_queue x memory)): a lone program's loads meet idle DRAM, a program among many that together
        pull a share of the bandwidth waits behind their loads; absent = 0.
    iter_l2_s[kind]: time of one such iteration when its loads hit in L2 (the share of an op's reads that are
        L2-resident re-reads: its `reread_bytes` x hit / bytes_read); absent = iter_s[kind] whatever the source.
        MEASURED for torch's row reductions (reduce_kernel: ~0.17 us per 4-value load from L2, ~0.35-0.45 from
        HBM, hwmodels/calibration/data/regimes_*_v4.csv reduce_grid).
    iter_l1_s[kind]: time of one such iteration when its loads hit in the CTA's own L1 (an op's `l1_iters`: a row the
        CTA swept moments before and small enough to stay in its L1); absent = priced as the op's other iterations.
    l2_sweep_hit: the measured share of a re-scanned set that still comes from the L2, as a function of the set's
        size over the L2 (L2 bytes x l2_fraction), for the two reuse patterns of a multi-sweep kernel
        (hwmodels.roofline SWEEP_REREAD): "first" = a kernel re-reading, in the same order, the set the kernel before
        it read; "again" = CTAs re-sweeping their own rows within one kernel (reuse distance = the rows in flight).
        {pattern: (sizes over L2, ascending; hit shares in [0, 1])}, interpolated linearly, held at the ends.
        Empty = uncalibrated: all-or-nothing (a set that fits hits, a larger one does not). A chip that borrows
        another's efficiencies borrows its curve too (ASSUMPTION: the edge scales with the L2's size).
    l2_bw_bytes_s: the L2 read bandwidth a full-occupancy streaming kernel reaches (bytes/s); when given, every
        op's reads and writes, those served by L2 included, take at least (bytes_read + bytes_written +
        spill) / l2_bw_bytes_s in the wave model (hwmodels.roofline): re-reads that hit in L2 are not free.
        None = uncalibrated, or borrowed by another chip (an absolute rate does not transfer): hits cost nothing.
    broadcast_copy: terms of a broadcast copy (kind copy_broadcast with `reread_bytes`: transformers' repeat_kv, PyTorch's
        non-vectorized elementwise loop, whose time is set by load latency, not bandwidth; hwmodels.roofline
        `broadcast_s`), in the fitted file's units: lead_ps_per_byte (each source byte's first load, from HBM),
        near_ps_per_byte / near_slope_ps_per_byte (per byte written when the copies of one source row are in flight
        together), far_ps_per_byte / far_l2_scale (per byte written as one source row approaches the L2's size).
        Empty = uncalibrated: no such term. MEASURED: measure_graph_chains.py v6 (--repeat-kv-grid).
    engine_ar: the engines' own custom all-reduce kernels' terms (hwmodels.roofline ENGINE_AR_TERMS, seconds): barrier_s
        = one per-CTA flag barrier (vLLM's multi_gpu_barrier, TensorRT-LLM's Barrier::sync; the Lamport one-shot has
        none: hwmodels.roofline ENGINE_AR_BARRIERS), norm_s = one serialized RMSNorm of a fused epilogue (per token:
        a block reduction and two cluster syncs; a one-shot exposes one, a two-shot g), phase_s = one serialized peer-data phase (hwmodels.roofline AR_PHASES: a one-shot has one,
        a two-shot two; it replaces the own kernel's fixed_s), flag_store_s =
        each further release store of TensorRT-LLM's barrier loop (an op's sync_steps). When given they replace, for
        the custom kinds, the barrier (link latency + sync per peer), fixed_s and sync_s that the project's own kernel
        fitted (its grid-wide barriers); the link terms stay. Empty = the own kernel's terms price the engines.
    engine_ar_rules: this device's values of the engines' all-reduce rules that are shares, not times (ENGINE_AR_RULES:
        first_fill_extra = vLLM's two-shot in one loop step, lamport_overlap = the 2-rank Lamport one-shot's phase /
        transfer overlap, lamport_phase2 / twoshot2_link = grid 17's 2-rank rules, lamport2_link = grid 20's, oneshot2_link /
        multi_link_time = grid 23's (AR_ONESHOT2_LINK / AR_MULTI_LINK_TIME), lamport_peer_share = grid 25's;
        hwmodels.roofline AR_FIRST_FILL_EXTRA / AR_LAMPORT_OVERLAP / AR_LAMPORT_PHASE2 / AR_TWOSHOT2_LINK say what each does). A key left
        out takes the module constant (which turns the rule off). Written only by a judged candidate's writer.
    borrowed_kinds / kinds_from: the op kinds never measured on this device whose terms its fitted file takes from
        the sibling `kinds_from` (the file's `unmeasured_kinds_from`; load_efficiency), () / None when none.
    source: where these numbers come from (a fitted file, or "uncalibrated default").
    """

    compute: dict[str, float] = field(default_factory=lambda: {k: 1.0 for k in KINDS})
    memory: dict[str, float] = field(default_factory=lambda: {k: 1.0 for k in KINDS})
    compute_dtype: dict[str, float] = field(default_factory=dict)
    fixed_s: dict[str, float] = field(default_factory=lambda: {k: 0.0 for k in KINDS})
    sync_s: dict[str, float] = field(default_factory=lambda: {k: 0.0 for k in KINDS})
    saturation: dict[str, float] = field(default_factory=lambda: {k: 1.0 for k in KINDS})
    link_ceiling: dict[str, float] = field(default_factory=dict)
    overlap_p: float | None = None
    l2_fraction: float = 1.0
    link_latency_s: float | None = None
    link_kind: str | None = None   # the interconnect the link terms were measured on
    launch_graph_s: float | None = None
    launch_eager_s: float | None = None
    loop_iter_s: float | None = None
    dram_latency_s: float | None = None
    l2_latency_s: float | None = None
    cta_slots: dict[str, float] = field(default_factory=dict)
    iter_s: dict[str, float] = field(default_factory=dict)
    cta_fixed_s: dict[str, float] = field(default_factory=dict)
    wave_fixed_s: dict[str, float] = field(default_factory=dict)
    iter_l2_s: dict[str, float] = field(default_factory=dict)
    cta_serial_s: dict[str, float] = field(default_factory=dict)
    iter_l1_s: dict[str, float] = field(default_factory=dict)
    chain_queue: dict[str, float] = field(default_factory=dict)
    #: bytes / s one CTA streams through its SM at most, by kind (stream_per_sm_gbs: GB/s; hwmodels.roofline
    #: SM_STREAM_CEILING, whose module table it replaces for the kinds it names)
    stream_per_sm_bytes_s: dict[str, float] = field(default_factory=dict)
    l2_sweep_hit: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = field(default_factory=dict)
    l2_bw_bytes_s: float | None = None
    engine_ar: dict[str, float] = field(default_factory=dict)
    engine_ar_rules: dict[str, float] = field(default_factory=dict)
    broadcast_copy: dict[str, float] = field(default_factory=dict)
    #: the op kinds whose terms came from another device's fitted file (`unmeasured_kinds_from`), and that device
    borrowed_kinds: tuple[str, ...] = ()
    kinds_from: str | None = None
    source: str = "uncalibrated default: 1.0 (datasheet peaks)"


@dataclass(frozen=True)
class HardwareSpec:
    """One device type, or a node of `devices` identical devices joined by `link_*`. All SI units."""

    name: str
    vendor: str
    architecture: str
    kind: str
    devices: int
    max_devices_per_node: int
    unit_name: str
    units: int
    clock_hz: float | None
    peak_flops: dict[str, float]
    hbm_capacity_bytes: float
    hbm_bw_bytes_s: float
    ddr_capacity_bytes: float | None
    ddr_bw_bytes_s: float | None
    smem_per_unit_bytes: float | None
    sram_total_bytes: float | None
    l2_bytes: float | None
    launch_eager_s: float
    launch_graph_s: float
    link_kind: str
    link_bw_bytes_s: float | None
    link_latency_s: float | None
    sources: dict[str, str]
    assumed: frozenset[str]
    file: str
    notes: str = ""
    efficiency: Efficiency = field(default_factory=Efficiency)
    #: where the efficiencies come from, in words: "fitted file PATH", "borrowed from NAME (fitted file PATH)",
    #: or "" when none is found (the uncalibrated datasheet roofline; see `calibrated`)
    calibration: str = ""

    @property
    def calibrated(self) -> bool:
        """False when the spec runs on the uncalibrated defaults (efficiencies 1.0: datasheet peaks)."""
        return bool(self.calibration)

    def calibration_text(self) -> str:
        """One phrase for outputs: which calibration prices this device."""
        if not self.calibration:
            return (f"UNCALIBRATED: efficiencies 1.0 (datasheet peaks); no fitted file {self.name}.yaml and no "
                    "calibration_from")
        eff = self.efficiency
        return self.calibration + (f"; {len(eff.borrowed_kinds)} op kinds never measured there from "
                                   f"{eff.kinds_from}'s fitted file" if eff.borrowed_kinds else "")

    def flops_for(self, dtype: str) -> float:
        """Peak dense FLOP/s for arithmetic in `dtype`, falling back to the next wider unit the device has."""
        for d in DTYPE_FALLBACK[dtype]:
            if self.peak_flops.get(d):
                return self.peak_flops[d]
        raise SpecError(f"has no peak rate for {dtype} nor any fallback {DTYPE_FALLBACK[dtype]}",
                        file=self.file, field="peak_tflops")

    def flops_table(self):
        """Peak FLOP/s indexed by dtype code (see hwmodels.opkinds.DTYPES), for vectorized pricing."""
        import numpy as np

        return np.array([self.flops_for(d) for d in DTYPES], dtype=np.float64)

    def with_efficiency(self, eff: Efficiency) -> "HardwareSpec":
        return replace(self, efficiency=eff)

    def scaled(self, **changes: float) -> "HardwareSpec":
        """A copy with some SI fields replaced (what-if studies, property tests)."""
        return replace(self, **changes)


class _Reader:
    """Walks a parsed spec document, collecting values with their sources and precise error messages."""

    def __init__(self, doc: dict, file: str):
        self.doc, self.file = doc, file
        self.sources: dict[str, str] = {}
        self.assumed: set[str] = set()

    def _node(self, path: str, required: bool) -> Any:
        node: Any = self.doc
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                if required:
                    raise SpecError("is missing", file=self.file, field=path)
                return None
            node = node[part]
        return node

    def text(self, path: str, allowed: tuple[str, ...] | None = None, required: bool = True) -> str | None:
        v = self._node(path, required)
        if v is None:
            return None
        if not isinstance(v, str):
            raise SpecError(f"must be a string, got {v!r}", file=self.file, field=path)
        if allowed is not None and v not in allowed:
            raise SpecError(f"is {v!r}; allowed: {', '.join(allowed)}", file=self.file, field=path)
        return v

    def integer(self, path: str) -> int:
        v = self._node(path, True)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1 or v > 1024:
            raise SpecError(f"must be an integer from 1 to 1024, got {v!r}", file=self.file, field=path)
        return v

    def number(self, path: str, required: bool = True, nullable: bool = False) -> float | None:
        """A `{value, source}` entry: returns the value (None when nullable and null)."""
        node = self._node(path, required)
        if node is None:
            return None
        if not isinstance(node, dict) or "value" not in node or "source" not in node:
            raise SpecError("must be written {value: <number>, source: \"<where it comes from>\"}",
                            file=self.file, field=path)
        src = node["source"]
        if not isinstance(src, str) or not src.strip():
            raise SpecError("needs a non-empty source", file=self.file, field=path)
        v = node["value"]
        self.sources[path] = src
        if node.get("assumed"):
            self.assumed.add(path)
        if v is None:
            if nullable:
                return None
            raise SpecError("is null but the model needs it; give a value (mark it assumed: true if it "
                            "is an assumption)", file=self.file, field=path)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise SpecError(f"value must be a positive number, got {v!r}", file=self.file, field=path)
        if path in INTEGER_FIELDS and v != int(v):
            raise SpecError(f"value must be a whole number (it counts {'SMs' if 'units' in path else 'devices'}), got "
                            f"{v!r}", file=self.file, field=path)
        hi = _plausible_max(path)
        if v > hi:
            raise SpecError(f"value {v:g} is beyond {hi:g}, the plausible maximum for this field (check its unit)",
                            file=self.file, field=path)
        return float(v)


def _scaled(v: float | None, k: float) -> float | None:
    return None if v is None else v * k


def _read_spec(doc: Any, file: str) -> HardwareSpec:
    if not isinstance(doc, dict):
        raise SpecError("must be a YAML mapping of fields", file=file)
    _check_keys(doc, SPEC_KEYS, file)
    r = _Reader(doc, file)
    name = r.text("name")
    if not _DEVICE_NAME.match(name) or set(name) == {"."}:
        raise SpecError(f"must be 1-100 letters, digits, '.', '_', '+' or '-' without path separators (it names the "
                        f"fitted file <name>.yaml), got {name!r}", file=file, field="name")
    peak: dict[str, float] = {}
    tflops = r._node("peak_tflops", True)
    if not isinstance(tflops, dict) or not tflops:
        raise SpecError(f"must map dtypes ({', '.join(PEAK_DTYPES)}) to {{value, source}}", file=file,
                        field="peak_tflops")
    for dt in tflops:
        if dt not in PEAK_DTYPES:
            raise SpecError(f"unknown dtype {dt!r}; allowed: {', '.join(PEAK_DTYPES)}", file=file,
                            field=f"peak_tflops.{dt}")
        v = r.number(f"peak_tflops.{dt}", nullable=True)
        if v is not None:
            peak[dt] = v * 1e12
    if "bf16" not in peak and "fp16" not in peak:
        raise SpecError("needs at least a bf16 or fp16 rate", file=file, field="peak_tflops")

    units = int(r.number("compute_units.count"))
    smem = r.number("onchip.smem_per_unit_kib", required=False, nullable=True)
    sram_total = r.number("onchip.sram_total_mib", required=False, nullable=True)
    l2 = r.number("onchip.l2_mib", required=False, nullable=True)
    clock = r.number("compute_units.clock_ghz", nullable=True)
    ddr_cap = r.number("memory.ddr.capacity_gib", required=False, nullable=True)
    ddr_bw = r.number("memory.ddr.bandwidth_gbps", required=False, nullable=True)
    max_dev = r.number("max_devices_per_node")
    devices = r.integer("devices")
    if devices > max_dev:
        raise SpecError(f"is {devices}, more than max_devices_per_node ({int(max_dev)})", file=file,
                        field="devices")
    notes = doc.get("notes", "")
    spec = HardwareSpec(
        name=name,
        vendor=r.text("vendor"),
        architecture=r.text("architecture", ARCHITECTURES),
        kind=r.text("kind", DEVICE_KINDS),
        devices=devices,
        max_devices_per_node=int(max_dev),
        unit_name=r.text("compute_units.name"),
        units=units,
        clock_hz=None if clock is None else clock * 1e9,
        peak_flops=peak,
        hbm_capacity_bytes=r.number("memory.hbm.capacity_gib") * GIB,
        hbm_bw_bytes_s=r.number("memory.hbm.bandwidth_gbps") * 1e9,
        ddr_capacity_bytes=None if ddr_cap is None else ddr_cap * GIB,
        ddr_bw_bytes_s=None if ddr_bw is None else ddr_bw * 1e9,
        smem_per_unit_bytes=None if smem is None else smem * KIB,
        sram_total_bytes=(sram_total * MIB if sram_total is not None
                          else (smem * KIB * units if smem is not None else None)),
        l2_bytes=None if l2 is None else l2 * MIB,
        launch_eager_s=r.number("launch_overhead_us.eager") * 1e-6,
        launch_graph_s=r.number("launch_overhead_us.graph") * 1e-6,
        link_kind=r.text("interconnect.kind", LINK_KINDS),
        link_bw_bytes_s=_scaled(r.number("interconnect.bandwidth_gbps", nullable=True), 1e9),
        link_latency_s=_scaled(r.number("interconnect.latency_us", nullable=True), 1e-6),
        sources=dict(r.sources),
        assumed=frozenset(r.assumed),
        file=file,
        notes=notes if isinstance(notes, str) else str(notes),
    )
    calib_name = doc.get("calibration_from", name)
    if not isinstance(calib_name, str) or not _DEVICE_NAME.match(calib_name) or set(calib_name) == {"."}:
        raise SpecError(f"must be the name of a calibrated device (e.g. H100-SXM), without path separators, got "
                        f"{calib_name!r}", file=file, field="calibration_from")
    if calib_name != name and fitted_file(calib_name) is None:
        raise SpecError(f"names {calib_name!r}, which has no fitted file in "
                        f"{', '.join(str(d) for d in fitted_dirs())}", file=file, field="calibration_from")
    eff = load_efficiency(calib_name, spec)
    ffile = fitted_file(calib_name)
    if ffile is not None:
        spec = replace(spec, calibration=(f"fitted file {ffile}" if calib_name == name else
                                          f"borrowed from {calib_name} (fitted file {ffile})"))
    if eff.launch_graph_s is not None or eff.launch_eager_s is not None:
        spec = replace(spec, launch_graph_s=eff.launch_graph_s or spec.launch_graph_s,
                       launch_eager_s=eff.launch_eager_s or spec.launch_eager_s)
    if calib_name != name:
        # the L2 bandwidth is an absolute rate of the measured chip, not an efficiency: it does not transfer.
        # The broadcast copy's per-byte load-latency terms do (ASSUMPTION: HBM and L2 latencies of the same order on
        # the chips that borrow them; the in-flight window they depend on is the target's SM count x 8192 elements)
        eff = replace(eff, l2_bw_bytes_s=None,
                      source=f"borrowed from {calib_name} (not measured on {name}): {eff.source}")
    if eff.link_kind and eff.link_kind != spec.link_kind:
        # interconnect terms measured on another kind of link do not transfer: keep the spec's
        eff = replace(eff, link_latency_s=None, link_kind=None,
                      memory={**eff.memory, "collective": 1.0, "alltoall": 1.0},
                      fixed_s={**eff.fixed_s, "collective": 0.0, "alltoall": 0.0},
                      sync_s={**eff.sync_s, "collective": 0.0})
    return spec.with_efficiency(eff)


def load_efficiency(device_name: str, spec: HardwareSpec | None = None) -> Efficiency:
    """Fitted efficiencies for `device_name` (the first fitted file of fitted_dirs()), or the 1.0 defaults
    if no folder has one."""
    path = fitted_file(device_name)
    if path is None:
        return Efficiency()
    doc, borrowed, sibling = _fitted_doc(device_name, ())
    eff = efficiency_from_dict(doc, str(path))
    if borrowed:
        eff = replace(eff, borrowed_kinds=borrowed, kinds_from=sibling,
                      source=f"{eff.source}; {len(borrowed)} kinds never measured on {device_name} from {sibling}'s "
                             f"fitted file (unmeasured_kinds_from)")
    return eff


#: the fitted file's sections keyed by op kind (hwmodels.opkinds.KINDS): a kind named in none of them was never
#: measured on that device, and `unmeasured_kinds_from` fills it from the named sibling
PER_KIND_SECTIONS = ("compute", "memory", "saturation", "fixed_us", "sync_us", "link_ceiling", "cta_slots",
                     "cta_fixed_us", "wave_fixed_us", "iter_us", "iter_l2_us", "cta_serial_us", "iter_l1_us",
                     "chain_queue", "stream_per_sm_gbs")


def _fitted_doc(device_name: str, seen: tuple[str, ...]) -> tuple[dict, tuple[str, ...], str | None]:
    """(the fitted file's mapping for `device_name` with its unmeasured kinds filled in, the kinds filled, from whom).

    A fitted file may name a sibling device in `unmeasured_kinds_from: {device: NAME, source: why}`: every op kind
    that none of this file's PER_KIND_SECTIONS names takes all of NAME's entries for it (resolved the same way, so
    a chain of siblings works), and an absent l2_sweep_hit curve takes NAME's. A kind this file names keeps this
    file's terms only (a partial measurement is not mixed with another device's). The H200 uses it for the production
    families measured on the H100-SXM alone (same GH100 SM; hwmodels/calibration/fitted/H200.yaml says why)."""
    path = fitted_file(device_name)
    if path is None:
        raise SpecError(f"has no fitted file in {', '.join(str(d) for d in fitted_dirs())}",
                        field="unmeasured_kinds_from")
    try:
        doc = load_yaml(path, "fitted efficiency file")
    except SparsesimError as e:
        raise SpecError(str(e)) from None
    if not isinstance(doc, dict):
        raise SpecError("must be a mapping", file=str(path))
    spec = doc.get("unmeasured_kinds_from")
    if spec is None:
        return doc, (), None
    sib = spec.get("device") if isinstance(spec, dict) else None
    if not isinstance(sib, str) or not _DEVICE_NAME.match(sib) or not str(spec.get("source", "")).strip():
        raise SpecError(f"must be {{device: NAME of a calibrated device, source: why its terms stand in}}, got {spec!r}",
                        file=str(path), field="unmeasured_kinds_from")
    if sib == device_name or sib in seen:
        raise SpecError(f"names {sib!r}, which leads back to {device_name!r} (a cycle)", file=str(path),
                        field="unmeasured_kinds_from")
    other, _, _ = _fitted_doc(sib, seen + (device_name,))
    named = set()
    for part in PER_KIND_SECTIONS:
        named |= set((doc.get(part) or {}).keys())
    borrowed = sorted({k for part in PER_KIND_SECTIONS for k in (other.get(part) or {})} - named)
    out = dict(doc)
    for part in PER_KIND_SECTIONS:
        add = {k: v for k, v in (other.get(part) or {}).items() if k in borrowed}
        if add:
            out[part] = {**(doc.get(part) or {}), **add}
    if "l2_sweep_hit" not in doc and "l2_sweep_hit" in other:
        out["l2_sweep_hit"] = other["l2_sweep_hit"]
    return out, tuple(borrowed), sib


def _keyed(doc: dict, part: str, file: str, base: dict, keys: tuple[str, ...], lo: float, hi: float,
           allowed: str, scale: float = 1.0) -> dict[str, float]:
    """`base` updated with the mapping doc[part] of key -> number in (lo, hi], each multiplied by `scale`."""
    table = dict(base)
    given = doc.get(part, {}) or {}
    if not isinstance(given, dict):
        raise SpecError(f"must map {', '.join(keys)} to numbers", file=file, field=part)
    for k, v in given.items():
        if k not in keys:
            raise SpecError(f"unknown key {k!r}; allowed: {', '.join(keys)}", file=file, field=f"{part}.{k}")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo < v <= hi:
            raise SpecError(f"must be {allowed}, got {v!r}", file=file, field=f"{part}.{k}")
        table[k] = float(v) * scale
    return table


#: Efficiency.engine_ar_rules' keys (dimensionless shares in [0, 1]; the fitted file's `engine_allreduce_rules`): this
#: device's value of a rule of the engines' all-reduce that hwmodels.roofline otherwise takes from its module constant
#: (first_fill_extra -> AR_FIRST_FILL_EXTRA, lamport_overlap -> AR_LAMPORT_OVERLAP; both 0 = off there; blind grid 17's
#: lamport_phase2 -> AR_LAMPORT_PHASE2, 1 = off, twoshot2_link -> AR_TWOSHOT2_LINK, 0 = off; blind grid 19's
#: oneshot_peer_share -> AR_PEER_SHARE for vLLM's one-shot; blind grid 20's lamport2_link -> AR_LAMPORT2_LINK, 0 = off;
#: blind grid 23's oneshot2_link -> AR_ONESHOT2_LINK, 0 = off, multi_link_time -> AR_MULTI_LINK_TIME, 1 = off; blind grid
#: 25's lamport_peer_share -> AR_PEER_SHARE for the Lamport one-shot; the in-step candidate's after_gemm_share ->
#: AR_AFTER_GEMM_SHARE, 0 = off)
ENGINE_AR_RULES = ("first_fill_extra", "lamport_overlap", "lamport_phase2", "twoshot2_link", "oneshot_peer_share",
                   "lamport2_link", "oneshot2_link", "multi_link_time", "lamport_peer_share", "after_gemm_share")

#: Efficiency.broadcast_copy's terms and their allowed ranges (ps per byte; far_l2_scale: a share of the L2's size)
BROADCAST_TERMS = {"lead_ps_per_byte": (0.0, 100.0), "near_ps_per_byte": (0.0, 100.0),
                   "near_slope_ps_per_byte": (0.0, 100.0), "far_ps_per_byte": (0.0, 100.0), "far_l2_scale": (0.01, 4.0)}


#: the reuse patterns of Efficiency.l2_sweep_hit
SWEEP_PATTERNS = ("first", "again")


def _sweep_hit(doc: Any, file: str) -> dict[str, tuple[tuple[float, ...], tuple[float, ...]]]:
    """Efficiency.l2_sweep_hit from {pattern: {set_over_l2: [x ascending, > 0], hit: [h in [0, 1]]}, source: text}."""
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise SpecError("must map first / again to {set_over_l2: [...], hit: [...]}", file=file, field="l2_sweep_hit")
    out = {}
    for k, v in doc.items():
        if k == "source":
            continue
        f = f"l2_sweep_hit.{k}"
        if k not in SWEEP_PATTERNS:
            raise SpecError(f"unknown pattern {k!r}; allowed: {', '.join(SWEEP_PATTERNS)}, source", file=file, field=f)
        xs, hs = (v.get("set_over_l2"), v.get("hit")) if isinstance(v, dict) else (None, None)
        ok = (isinstance(xs, list) and isinstance(hs, list) and len(xs) == len(hs) >= 2
              and all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in xs + hs))
        if not ok or any(a <= 0 for a in xs) or any(b <= a for a, b in zip(xs, xs[1:])) \
                or any(not 0 <= h <= 1 for h in hs):
            raise SpecError("must be {set_over_l2: [>= 2 sizes over the L2, > 0, ascending], hit: [as many shares in "
                            f"[0, 1]]}}, got {v!r}", file=file, field=f)
        out[k] = (tuple(float(a) for a in xs), tuple(float(h) for h in hs))
    return out


def efficiency_from_dict(doc: Any, file: str) -> Efficiency:
    """Read an efficiency mapping {compute: {kind: f}, memory: {kind: f}, compute_dtype: {dtype: f},
    fixed_us: {kind: us}, sync_us: {kind: us}, link_ceiling: {kind: f}, saturation: {kind: multiple of the SMs},
    overlap_p: p, l2_fraction: f,
    launch_us: {graph: us, eager: us}, cta_slots: {kind: CTAs per SM}, iter_us: {kind: us},
    cta_fixed_us: {kind: us}, wave_fixed_us: {kind: us}, iter_l2_us: {kind: us}, cta_serial_us: {kind: us},
    iter_l1_us: {kind: us}, chain_queue: {kind: share},
    l2_sweep_hit: {first | again: {set_over_l2: [...], hit: [...]}}, l2_bw_tbs: TB/s,
    broadcast_copy: {term: value} (Efficiency.broadcast_copy)} (all optional)."""
    if not isinstance(doc, dict):
        raise SpecError("must be a mapping", file=file)
    base = Efficiency()
    compute = _keyed(doc, "compute", file, base.compute, KINDS, 0.0, 1.5, "a fraction in (0, 1.5]")
    memory = _keyed(doc, "memory", file, base.memory, KINDS, 0.0, 1.5, "a fraction in (0, 1.5]")
    sat = _keyed(doc, "saturation", file, base.saturation, KINDS, 0.0, 16.0, "a multiple of the SM count in (0, 16]")
    cd = _keyed(doc, "compute_dtype", file, {}, DTYPES, 0.0, 1.5, "a factor in (0, 1.5]")
    fixed = _keyed(doc, "fixed_us", file, base.fixed_s, KINDS, -1e-12, 1e4, "microseconds in [0, 1e4)", 1e-6)
    p = doc.get("overlap_p")
    if p is not None and (isinstance(p, bool) or not isinstance(p, (int, float)) or not 1 <= p <= 64):
        raise SpecError(f"must be a number in [1, 64] or absent, got {p!r}", file=file, field="overlap_p")
    l2f = doc.get("l2_fraction", 1.0)
    if isinstance(l2f, bool) or not isinstance(l2f, (int, float)) or not 0 < l2f <= 1:
        raise SpecError(f"must be a fraction in (0, 1], got {l2f!r}", file=file, field="l2_fraction")
    sync = _keyed(doc, "sync_us", file, base.sync_s, KINDS, -1e-12, 1e3, "microseconds in [0, 1e3)", 1e-6)
    ceiling = _keyed(doc, "link_ceiling", file, {}, KINDS, 0.0, 1.5, "a fraction in (0, 1.5]")
    lat = doc.get("link_latency_us")
    if lat is not None and (isinstance(lat, bool) or not isinstance(lat, (int, float)) or not 0 <= lat < 1e3):
        raise SpecError(f"must be microseconds in [0, 1e3) or absent, got {lat!r}", file=file, field="link_latency_us")
    latency = doc.get("latency") or {}
    if not isinstance(latency, dict):
        raise SpecError("must map loop_iter_us / dram_us / l2_us to microseconds", file=file, field="latency")
    lat_s = {}
    for k in ("loop_iter_us", "dram_us", "l2_us"):
        v = latency.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 1e3):
            raise SpecError(f"must be microseconds in (0, 1e3), got {v!r}", file=file, field=f"latency.{k}")
        lat_s[k] = None if v is None else float(v) * 1e-6
    slots = _keyed(doc, "cta_slots", file, {}, KINDS, 0.0, 64.0, "resident CTAs per SM in (0, 64]")
    cta_fixed = _keyed(doc, "cta_fixed_us", file, {}, KINDS, -1e-12, 1e4, "microseconds in [0, 1e4)", 1e-6)
    wave_fixed = _keyed(doc, "wave_fixed_us", file, {}, KINDS, -1e-12, 1e4, "microseconds in [0, 1e4)", 1e-6)
    iters = _keyed(doc, "iter_us", file, {}, KINDS, 0.0, 1e3, "microseconds in (0, 1e3)", 1e-6)
    iters_l2 = _keyed(doc, "iter_l2_us", file, {}, KINDS, 0.0, 1e3, "microseconds in (0, 1e3)", 1e-6)
    cta_serial = _keyed(doc, "cta_serial_us", file, {}, KINDS, -1e-12, 1e3, "microseconds in [0, 1e3)", 1e-6)
    iters_l1 = _keyed(doc, "iter_l1_us", file, {}, KINDS, 0.0, 1e3, "microseconds in (0, 1e3)", 1e-6)
    queue = _keyed(doc, "chain_queue", file, {}, KINDS, -1e-12, 1.0, "a share in [0, 1]")
    stream = _keyed(doc, "stream_per_sm_gbs", file, {}, KINDS, 0.0, 1e4, "GB/s in (0, 1e4)", 1e9)
    sweep_hit = _sweep_hit(doc.get("l2_sweep_hit"), file)
    l2bw = doc.get("l2_bw_tbs")
    if l2bw is not None and (isinstance(l2bw, bool) or not isinstance(l2bw, (int, float)) or not 0 < l2bw <= 100):
        raise SpecError(f"must be TB/s in (0, 100] or absent, got {l2bw!r}", file=file, field="l2_bw_tbs")
    bcast = doc.get("broadcast_copy") or {}
    if not isinstance(bcast, dict):
        raise SpecError(f"must map {', '.join(BROADCAST_TERMS)} to numbers", file=file, field="broadcast_copy")
    for k, v in bcast.items():
        lo, hi = BROADCAST_TERMS.get(k, (None, None))
        if lo is None or isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
            allowed = "; ".join(f"{n} in [{a:g}, {b:g}]" for n, (a, b) in BROADCAST_TERMS.items())
            raise SpecError(f"must be one of: {allowed}; got {k}: {v!r}", file=file, field=f"broadcast_copy.{k}")
    eng = doc.get("engine_allreduce_us") or {}
    if not isinstance(eng, dict):
        raise SpecError("must map barrier / phase / flag_store / norm / after_gemm to microseconds", file=file,
                        field="engine_allreduce_us")
    for k, v in eng.items():
        if k not in ("barrier", "phase", "flag_store", "norm", "after_gemm") or isinstance(v, bool) \
                or not isinstance(v, (int, float)) or not 0 <= v < 1e3:
            raise SpecError("must map barrier / phase / flag_store / norm / after_gemm to microseconds in [0, 1e3), "
                            f"got {k}: {v!r}", file=file, field="engine_allreduce_us")
    rules = _keyed(doc, "engine_allreduce_rules", file, {}, ENGINE_AR_RULES, -1e-12, 1.0, "a share in [0, 1]")
    launch = doc.get("launch_us", {}) or {}
    if not isinstance(launch, dict):
        raise SpecError("must map graph/eager to positive microseconds", file=file, field="launch_us")
    for k, v in launch.items():
        if k not in ("graph", "eager") or isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise SpecError(f"must map graph/eager to positive microseconds, got {k}: {v!r}", file=file,
                            field="launch_us")
    return Efficiency(compute=compute, memory=memory, compute_dtype=cd,
                      fixed_s=fixed, sync_s=sync, saturation=sat, link_ceiling=ceiling,
                      overlap_p=None if p is None else float(p), l2_fraction=float(l2f),
                      link_latency_s=None if lat is None else float(lat) * 1e-6,
                      link_kind=(doc.get("links") or {}).get("kind"),
                      launch_graph_s=launch["graph"] * 1e-6 if "graph" in launch else None,
                      launch_eager_s=launch["eager"] * 1e-6 if "eager" in launch else None,
                      loop_iter_s=lat_s["loop_iter_us"], dram_latency_s=lat_s["dram_us"],
                      l2_latency_s=lat_s["l2_us"], cta_slots=slots, iter_s=iters, cta_fixed_s=cta_fixed,
                      wave_fixed_s=wave_fixed,
                      iter_l2_s=iters_l2, cta_serial_s=cta_serial, iter_l1_s=iters_l1, chain_queue=queue,
                      stream_per_sm_bytes_s=stream, l2_sweep_hit=sweep_hit,
                      l2_bw_bytes_s=None if l2bw is None else float(l2bw) * 1e12,
                      broadcast_copy={k: float(v) for k, v in bcast.items()},
                      engine_ar={f"{k}_s": float(v) * 1e-6 for k, v in eng.items()},
                      engine_ar_rules=rules,
                      source=str(doc.get("source", file)))


def list_hardware() -> list[str]:
    """Names of the shipped hardware specs."""
    return sorted(p.stem for p in SPEC_DIR.glob("*.yaml"))


def load_hardware(name_or_path: str | Path) -> HardwareSpec:
    """Load a shipped spec by name (e.g. 'H100-SXM') or any spec file by path. Loads are memoized per
    (file, modification time, fitted-file search path): specs are frozen, so sharing them is safe."""
    try:
        path = named_file(name_or_path, SPEC_DIR, "hardware")
    except SparsesimError as e:
        raise SpecError(str(e)) from None
    return _load_hardware_cached(str(path), file_stamp(path), os.environ.get(FITTED_ENV, ""))


@functools.lru_cache(maxsize=256)
def _load_hardware_cached(path: str, stamp, fitted_env: str) -> HardwareSpec:  # noqa: ARG001 - cache keys
    try:
        doc = load_yaml(path, "hardware spec file")
    except SparsesimError as e:
        raise SpecError(str(e)) from None
    return _read_spec(doc, path)
