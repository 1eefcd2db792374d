"""Strategy modules. Every module in this folder is imported here, so a new strategy is one new file
that defines `@register`-ed classes (see base.py); no list elsewhere needs editing."""
import importlib
import pkgutil

for _m in pkgutil.iter_modules(__path__):
    if _m.name != "base":
        importlib.import_module(f"{__name__}.{_m.name}")
