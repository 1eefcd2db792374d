"""Writing a priced scenario's files: results.csv, breakdown.csv, the plot, the reproduction tables."""
from __future__ import annotations

from simulator.commands._common import OutputDir


def write_results(sc, result, out: OutputDir, breakdown: bool) -> list[str]:
    """results.csv (and breakdown.csv) and the TPOT/throughput plot, as the scenario's outputs ask."""
    from simulator import report

    lines = []
    if "csv" in sc.outputs:
        p = out.file("results.csv")
        report.write_csv(result.results, p, progress=True)
        lines.append(f"wrote {p}  ({len(result.results)} rows)")
        if breakdown and result.breakdown is not None:
            p = out.file("breakdown.csv")
            result.breakdown.to_csv(p, index=False)
            lines.append(f"wrote {p}  (time per op for every setting)")
    if "plot" in sc.outputs:
        p = out.file("tpot_throughput.png")
        notes = report.write_plot(result.results, p, f"{sc.name}: TPOT and decode throughput vs context")
        lines.append(f"wrote {p}")
        lines += [f"note: {n}" for n in notes]
    return lines


def check_targets(sc, overridden: bool) -> None:
    """Stop before any pricing when one of the scenario's targets (paper reproductions) does not fit it, e.g. a
    Blackwell-only reproduction after `--set hardware=[H100-SXM]`. With overrides, the error says how to drop the
    targets and price the changed scenario alone."""
    from hwmodels.errors import ScenarioError
    from simulator.figures import check_fit, reproductions

    if sc.targets:
        reproductions()   # registers every reproduction's needs
    for name in sc.targets:
        try:
            check_fit(name, sc)
        except ScenarioError as e:
            if not overridden:
                raise
            raise ScenarioError(f"{e}; the targets compare with the paper's own setting: to price the changed "
                                f"scenario without them, add --set targets=[]") from None


def print_reproductions(sc, out: OutputDir) -> None:
    """Run the scenario's targets: print each table, write reproduction.csv."""
    if not sc.targets:
        return
    import pandas as pd

    from simulator.figures import run_reproduction

    frames = []
    for name in sc.targets:
        rep = run_reproduction(name, sc)
        print()
        print(rep.text())
        frames.append(rep.frame().assign(reproduction=name))
        for extra in getattr(rep, "files", lambda _o: [])(out):
            print(f"wrote {extra}")
    p = out.file("reproduction.csv")
    pd.concat(frames, ignore_index=True).to_csv(p, index=False)
    print(f"wrote {p}")
