"""The sections of benchmarks/calibration_accuracy.py, one module per kernel family or blind grid.

Each module exposes one function that prints its tables and adds its pooled figures to the summary board
(simulator.calibration.scoreboard.BOARD); calibration_accuracy.py's main() calls them in the report's order. A new
blind grid is one new module plus one call line in main().
"""
