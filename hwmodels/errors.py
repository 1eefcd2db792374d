"""Errors a user can cause. The CLI prints them without a traceback and exits non-zero.

They live in the hardware package because it is the bottom layer: `simulator` imports them from here;
`hwmodels` never imports from `simulator` (tests/test_layering.py).
"""


class SparsesimError(Exception):
    """A problem with the user's input: a file, a field, a value. The message says what is allowed."""

    def __init__(self, message: str, *, file: str | None = None, field: str | None = None):
        self.file = file
        self.field = field
        where = []
        if file:
            where.append(str(file))
        if field:
            where.append(f"field '{field}'")
        prefix = (": ".join(where) + ": ") if where else ""
        super().__init__(prefix + message)


class SpecError(SparsesimError):
    """A hardware or model specification file is missing, malformed or has a bad field."""


class ScenarioError(SparsesimError):
    """A scenario file or a strategy setting in it is malformed or refers to something unknown."""
