"""Strategy modules: one file per family of values of the strategy axes (base.py: the axes, the contract every
value implements, the registry). simulator.strategies.base.registry() imports every module in this folder, so a new
strategy is one new file that defines `@register`-ed classes; no list elsewhere needs editing."""
