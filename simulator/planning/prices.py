"""GPU prices for `sparsesim plan`: public on-demand list prices per GPU-hour (hwmodels/prices.yaml, each list
one provider at one date with its URL), overridable per scenario (plan.prices)."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import hwmodels
from hwmodels.errors import ScenarioError, SparsesimError
from hwmodels.yamlio import load_yaml

PRICES_FILE = Path(hwmodels.__file__).resolve().parent / "prices.yaml"


@functools.lru_cache(maxsize=4)
def _load(path: str) -> dict:
    doc = load_yaml(path, "price file")
    if not isinstance(doc, dict) or not isinstance(doc.get("lists"), dict) or doc.get("default") not in doc["lists"]:
        raise SparsesimError("must hold `lists:` (name -> {provider, date, url, usd_per_gpu_hour}) and a `default:` "
                             "naming one of them", file=path)
    for name, lst in doc["lists"].items():
        if not isinstance(lst, dict) or not all(k in lst for k in ("provider", "date", "url", "usd_per_gpu_hour")):
            raise SparsesimError("each list needs provider, date, url and usd_per_gpu_hour", file=path,
                                 field=f"lists.{name}")
        for hw, v in lst["usd_per_gpu_hour"].items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
                raise SparsesimError(f"must be a positive price, got {v!r}", file=path,
                                     field=f"lists.{name}.usd_per_gpu_hour.{hw}")
    return doc


def price_lists(path: str | Path = PRICES_FILE) -> dict:
    """The parsed price file: {'default': name, 'lists': {name: {provider, date, url, note, usd_per_gpu_hour}}}."""
    return _load(str(path))


@dataclass(frozen=True)
class Prices:
    """USD per GPU-hour by hardware name: a list from the price file, with scenario overrides on top."""

    list_name: str
    provider: str
    date: str
    url: str
    usd: dict
    overridden: tuple = ()

    def of(self, hardware: str) -> float | None:
        return self.usd.get(hardware)

    def source(self, hardware: str) -> str:
        if hardware in self.overridden:
            return "scenario override (plan.prices.override)"
        return f"{self.provider}, {self.date} ({self.url})"


def prices_for(list_name: str | None = None, override: dict | None = None, file: str | None = None) -> Prices:
    doc = price_lists()
    name = list_name or doc["default"]
    if name not in doc["lists"]:
        raise ScenarioError(f"unknown price list {name!r}; known: {', '.join(doc['lists'])}", file=file,
                            field="plan.prices.list")
    lst = doc["lists"][name]
    usd = dict(lst["usd_per_gpu_hour"])
    override = override or {}
    usd.update(override)
    return Prices(list_name=name, provider=lst["provider"], date=str(lst["date"]), url=lst["url"], usd=usd,
                  overridden=tuple(sorted(override)))


def alternative_lists(hardware: set[str], override: dict | None = None) -> list[Prices]:
    """Every list of the price file that (with the overrides) prices all of `hardware`."""
    out = []
    for name in price_lists()["lists"]:
        p = prices_for(name, override)
        if all(p.of(h) is not None for h in hardware):
            out.append(p)
    return out
