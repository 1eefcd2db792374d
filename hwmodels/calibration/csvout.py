"""Shared output helpers of the standalone measurement scripts (they run on the GPU machine by path)."""
from __future__ import annotations

import csv
import os
import subprocess


def driver_version() -> str:
    """The NVIDIA driver version as nvidia-smi reports it ('' when it cannot be read: informational only)."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout
        return out.strip().splitlines()[0]
    except Exception:  # noqa: BLE001 - informational
        return ""


def device_slug(name: str) -> str:
    return name.lower().replace(" ", "-")


def write_rows(out_dir: str, prefix: str, device: str, date: str, columns: list[str], rows: list[dict]) -> str:
    """Write `rows` (missing columns empty) to out_dir/<prefix>_<device-slug>_<date>.csv; return the path."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{prefix}_{device_slug(device)}_{date}.csv")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in columns})
    print(f"wrote {path} ({len(rows)} rows)")
    return path
