"""Capacity planning (`sparsesim plan`): the scenario's strategy tuples screened analytically, then each
survivor's highest SLO-compliant request rate found with the serving engine, GPUs and cost for a target
rate or a budget, a ranked table, Pareto plots and a one-page report.

    config.py   the scenario's `plan:` section (parse_plan_section)
    prices.py   USD per GPU-hour (hwmodels/prices.yaml, overridable)
    screen.py   the analytic screen: memory fit, SLO feasibility, optimistic capacity
    search.py   the engine search for one candidate's capacity
    study.py    the whole study (run_plan): candidates, screen, waves of engine searches, ranking
    report.py   the ranked table, runs, Pareto plots, Markdown / HTML report
"""
