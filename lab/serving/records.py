"""Files of a serving-calibration run (pure Python: read by benchmarks/des_validation.py and the tests).

One run of one engine writes three files into the output folder (``ENGINE`` = ``own`` for the harness's
server, ``hf`` for Hugging Face transformers' continuous batching; ``SLUG`` = the GPU name, lower case,
spaces as dashes; ``DATE`` = YYYY-MM-DD):

* ``serving_ENGINE_requests_SLUG_DATE.csv``: one row per request (driver.REQUEST_COLUMNS): workload, rid,
  nominal arrival, time it was handed to the scheduler, first-token and finish times (seconds from the
  workload's start; empty when the request did not finish before the drain limit), prompt and output lengths,
  preemptions.
* ``serving_ENGINE_steps_SLUG_DATE.csv.gz``: one row per engine step (gzip: a level holds tens of
  thousands of steps) (driver.STEP_COLUMNS): host timers
  (scheduler, input packing, launch, device sync, scheduler update), the device span (CUDA events), the path
  (graph / eager), rows and padded graph size, and the batch composition (decode rows with the KV length each
  attends, prefill chunks as ``tokens:prefix``). Workload ``calib`` rows are the controlled steps of the
  host-overhead calibration (no scheduler: a fixed batch repeated). A run with async scheduling
  (``serving_ownasync_*``) adds driver.ASYNC_COLUMNS: launch end, wait start, ids on the host, the host work
  hidden behind the step, the device gap before it, the decode rows fed on the device.
* ``serving_ENGINE_config_SLUG_DATE.json``: everything needed to replay the run in the simulator (model shape,
  scheduler parameters, KV blocks, block size, capture sizes, attention backend, workloads with their
  generator parameters, software versions, per-workload summaries).
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import math
import os
import re

FLOAT_COLS = {"arrival_s", "enqueue_s", "first_token_s", "finish_s", "t_start_s", "sched_s", "prep_s", "launch_s",
              "sync_s", "update_s", "wall_s", "gpu_s", "t_launch_end_s", "t_wait_s", "t_ids_s", "hidden_s", "gpu_gap_s"}
INT_COLS = {"rid", "input_tokens", "output_tokens", "preemptions", "step", "rows", "padded", "tokens", "n_decode",
            "decode_ctx_sum", "running", "waiting", "kv_blocks_used", "fed_rows"}


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


EXT = {"requests": "csv", "steps": "csv.gz", "config": "json"}


def paths(out_dir: str, engine: str, gpu: str, date: str) -> dict:
    s = slug(gpu)
    return {k: os.path.join(out_dir, f"serving_{engine}_{k}_{s}_{date}.{EXT[k]}") for k in EXT}


def _fmt(v):
    if isinstance(v, float):   # numpy floats too (np.float64 subclasses float)
        return "" if math.isnan(v) else format(float(v), ".9g")
    if type(v).__module__ == "numpy":
        return v.item()
    return v


def write_csv(path: str, columns: list[str], rows: list[dict]) -> str:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=columns, extrasaction="raise")
    w.writeheader()
    for r in rows:
        w.writerow({c: _fmt(r.get(c, "")) for c in columns})
    data = buf.getvalue().encode()
    if path.endswith(".gz"):
        data = gzip.compress(data, compresslevel=9, mtime=0)
    with open(path, "wb") as f:
        f.write(data)
    return path


def read_csv(path: str) -> list[dict]:
    """Rows with numeric columns converted (empty float cells -> nan)."""
    out = []
    if not os.path.exists(path) and os.path.exists(path + ".gz"):   # committed gzip-compressed
        path += ".gz"
    with open(path, "rb") as fb:
        raw = fb.read()
    if path.endswith(".gz") or raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    with io.StringIO(raw.decode(), newline="") as f:
        for r in csv.DictReader(f):
            for c in list(r):
                if c in FLOAT_COLS:
                    r[c] = float(r[c]) if r[c] != "" else math.nan
                elif c in INT_COLS:
                    r[c] = int(float(r[c])) if r[c] != "" else 0
            out.append(r)
    return out


def parse_decode_ctx(cell: str) -> list[int]:
    return [int(x) for x in cell.split()] if cell else []


def parse_chunks(cell: str) -> list[tuple[int, int]]:
    """'512:0 300:1024' -> [(512, 0), (300, 1024)] (tokens, prefix)."""
    out = []
    for part in (cell.split() if cell else []):
        a, b = part.split(":")
        out.append((int(a), int(b)))
    return out


def write_config(path: str, cfg: dict) -> str:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(cfg, f, indent=1, sort_keys=True, default=str)
    return path


def load_run(out_dir: str, engine: str, gpu: str | None = None, date: str | None = None) -> dict:
    """{'config': dict, 'requests': rows, 'steps': rows} of one engine's run in out_dir. With gpu/date None the
    single matching set of files is taken (an error if there are several or none)."""
    if gpu and date:
        p = paths(out_dir, engine, gpu, date)
    else:
        pat = re.compile(rf"serving_{engine}_config_(.+)_(\d{{4}}-\d{{2}}-\d{{2}})\.json$")
        found = [m for m in (pat.match(f) for f in sorted(os.listdir(out_dir))) if m]
        if len(found) != 1:
            raise FileNotFoundError(f"{out_dir}: expected one serving_{engine}_config_*.json, found {len(found)}")
        s, d = found[0].group(1), found[0].group(2)
        p = {k: os.path.join(out_dir, f"serving_{engine}_{k}_{s}_{d}.{EXT[k]}") for k in EXT}
    with open(p["config"]) as f:
        cfg = json.load(f)
    return {"config": cfg, "requests": read_csv(p["requests"]), "steps": read_csv(p["steps"]), "paths": p}
