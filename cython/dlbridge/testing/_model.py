"""The kit's model: clauses, their verdicts, and the two subjects they check.

A clause is one requirement of the DLPack specification (or of the CUDA
array interface, the array interface or the buffer protocol), checked by
one function. The function receives the subject (a ``Producer`` or a
``Consumer``) and returns what it observed when the requirement holds; it
raises ``Failed`` with what it observed when it does not, ``Warned`` when
what is required holds but the library departs from what is recommended
(a SHOULD, a preferred exception, a convention), and ``NotApplicable`` when
the subject has nothing the clause could check (the factory declined the
case, the library has no exchange table). Anything else it raises is a
failure too: a library that raises where the specification says it must
not.

The levels (docs/check-your-library.md, "Verdicts"): FAIL only where a
cited MUST (or the array API's "must") is broken, or data is wrong, lost,
leaked or freed twice; WARN for the rest, which the report shows and the
exit status ignores.
"""
from __future__ import annotations

import dataclasses
import inspect
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable

PASS, WARN, FAIL, NOT_APPLICABLE = "pass", "warn", "fail", "n/a"
VERDICTS = (PASS, WARN, FAIL, NOT_APPLICABLE)
SIDES = ("producer", "consumer")


class Failed(Exception):
    """The clause does not hold; the message is what was observed."""


class Warned(Exception):
    """What is required holds, but not what is recommended; the message says how."""


class NotApplicable(Exception):
    """The subject has nothing this clause checks; the message says why."""


@dataclass(frozen=True)
class Clause:
    id: str          # "producer.capsule-name.max-version-none": stable, used as the test id
    side: str        # "producer" or "consumer"
    title: str       # what holds when the clause passes, in one line
    source: str      # the document that requires it: "DLPack Python specification", "dlpack.h", ...
    cites: str       # its sentence, quoted
    tier: str        # "cpu", or "gpu": needs a CUDA device, not applicable without one
    check: Callable[[Any], str] = dataclasses.field(compare=False, repr=False)


@dataclass(frozen=True)
class Result:
    """A clause's verdict on one subject; the JSON schema of ``check --json``."""
    clause: str
    verdict: str     # PASS, WARN, FAIL or NOT_APPLICABLE
    observed: str
    title: str
    source: str
    cites: str


CLAUSES: list[Clause] = []


def clause(id: str, *, title: str, source: str, cites: str, tier: str = "cpu"):
    """Registers the decorated function as the check of a clause; the side is
    the first part of `id`."""
    side = id.partition(".")[0]
    assert side in SIDES and tier in ("cpu", "gpu"), (id, tier)
    assert all(c.id != id for c in CLAUSES), f"two clauses {id}"

    def register(check: Callable[[Any], str]) -> Callable[[Any], str]:
        CLAUSES.append(Clause(id, side, title, source, cites, tier, check))
        return check
    return register


OBSERVED_LIMIT = 1 << 16  # characters of an observation; a library's message can be any size


def describe(error: BaseException) -> str:
    """"Type: message", whatever the exception's __str__ does."""
    name = type(error).__name__
    try:
        message = str(error)
    except BaseException as inner:  # noqa: B036  (a library's __str__ may raise anything)
        message = f"<its str() raised {type(inner).__name__}>"
    return f"{name}: {message}" if message else name


def bounded(text: str, limit: int = OBSERVED_LIMIT) -> str:
    """`text`, cut to `limit` characters with a note of how many more there were."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit} characters more)"


def expected_values(shape: Iterable[int], dtype: str) -> list:
    """What a factory's array holds, flattened in C order: 0, 1, 2, ... as
    NumPy's astype(dtype) gives them (for bool, 0 is False, the rest True)."""
    count = math.prod(shape)
    if dtype == "bool":
        return [i != 0 for i in range(count)]
    if dtype.startswith("complex"):
        return [complex(i) for i in range(count)]
    if dtype.startswith("float"):
        return [float(i) for i in range(count)]
    return list(range(count))


# The views a factory may make (``FACTORY(shape, dtype, view=NAME)``): of an
# array holding 0, 1, 2, ... in C order of the base shape, the view by
# NumPy's indexing, of the shape the kit passes.
VIEWS = {"transposed": ((3, 2), ".T"), "strided": ((12,), "[::2]"), "offset": ((8,), "[2:]"),
         "reversed": ((6,), "[::-1]")}


def view_values(view: str, dtype: str) -> tuple[tuple[int, ...], list]:
    """(shape, values in C order) of the view named `view` (VIEWS)."""
    base, _ = VIEWS[view]
    values = expected_values(base, dtype)
    if view == "transposed":
        rows, columns = base
        return (columns, rows), [values[r * columns + c] for c in range(columns) for r in range(rows)]
    picked = {"strided": values[::2], "offset": values[2:], "reversed": values[::-1]}[view]
    return (len(picked),), picked


class Producer:
    """The library under test as a producer: its FACTORY, called as
    ``FACTORY(shape, dtype, *, read_only=False)`` and, in the GPU tier, with
    ``device="cuda"`` too; for a view (VIEWS), with ``view=NAME``. A factory
    declines a case by raising NotImplementedError, which makes the clause
    not applicable; one that takes no ``device`` or ``view`` keyword (its
    TypeError names it) declines every case that needs it."""

    side = "producer"

    def __init__(self, factory: Callable[..., Any], name: str):
        self.factory, self.name = factory, name

    def make(self, shape: tuple[int, ...] = (2, 3), dtype: str = "float32", *, read_only: bool = False,
             device: str | None = None, view: str | None = None) -> Any:
        case = (f"{dtype}{list(shape)}{' read-only' if read_only else ''}{' on ' + device if device else ''}"
                f"{f' as the {view} view' if view else ''}")
        keywords: dict[str, Any] = {"read_only": read_only}
        optional = {"device": device, "view": view}
        keywords.update((name, value) for name, value in optional.items() if value is not None)
        try:
            return self.factory(tuple(shape), dtype, **keywords)
        except NotImplementedError as error:
            raise NotApplicable(f"the factory declines {case}" + (f": {error}" if str(error) else "")) from None
        except TypeError as error:
            for name in keywords.keys() & optional.keys():
                if name in str(error):
                    raise NotApplicable(f"the factory takes no {name} keyword ({describe(error)})") from None
            raise


    def make_any(self, *, read_only: bool = False) -> tuple[tuple[int, ...], str, Any]:
        """(shape, dtype, array) of the first of a few small cases that the
        factory makes, for clauses that need some array and not a given one."""
        reasons = []
        for shape, dtype in (((2, 3), "float32"), ((6,), "float32"), ((6,), "int32"), ((6,), "uint8")):
            try:
                return shape, dtype, self.make(shape, dtype, read_only=read_only)
            except NotApplicable as reason:
                reasons.append(str(reason))
        raise NotApplicable("; ".join(reasons))


class Consumer:
    """The library under test as a consumer: its FUNCTION, called with a
    producer object, returns the library's array made from it. A FUNCTION
    of a library whose arrays have only some numbers of dimensions (pyarrow's
    are 1-D) says which in an attribute, ``FUNCTION.dlpack_ndims = (1,)``:
    the kit then offers each case in a form of those dimensions, or none.
    It declines one case by raising NotImplementedError; the clause that
    needs an import of it is then not applicable. A FUNCTION that takes the
    array API's ``copy`` keyword is called with it too, and one that takes
    ``device`` with ``device="cpu"`` (the FUNCTION maps it to its library's
    CPU device)."""

    side = "consumer"

    def __init__(self, function: Callable[..., Any], name: str):
        self.function, self.name = function, name
        try:
            declared = getattr(function, "dlpack_ndims", None)
        except Exception as error:  # a callable whose attribute lookup raises
            raise _spec_error(f"{name}.dlpack_ndims: reading it raised {describe(error)}") from None
        self.ndims = _ndims(declared, name)
        self.keywords = {keyword: _takes_keyword(function, keyword) for keyword in ("copy", "device")}

    def takes(self, ndim: int) -> bool:
        return self.ndims is None or ndim in self.ndims

    def require(self, keyword: str) -> None:
        """NotApplicable unless FUNCTION takes `keyword` ("copy" or "device")."""
        takes = self.keywords[keyword]
        if not takes:
            raise NotApplicable(f"the FUNCTION {'takes no' if takes is False else 'has no signature to show a'} "
                                f"{keyword} keyword (FUNCTION(producer, *, {keyword}=None) passes it to its "
                                f"from_dlpack)")

    def consume(self, producer: Any, **keywords: Any) -> Any:
        return self.function(producer, **keywords)


def _takes_keyword(function: Callable[..., Any], name: str) -> bool | None:
    """Whether `function` takes the keyword `name`; None where its signature
    cannot be read (a builtin may have none)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except Exception:  # none to read (a builtin), or a callable whose __signature__ raises
        return None
    return any(p.kind == p.VAR_KEYWORD or (p.name == name and p.kind != p.POSITIONAL_ONLY) for p in parameters)


def _ndims(value: Any, name: str) -> frozenset[int] | None:
    """The numbers of dimensions a FUNCTION's ``dlpack_ndims`` names, read once."""
    if value is None:
        return None
    try:
        ndims = frozenset(value)
    except Exception:  # not iterable, or an iterable that raises
        ndims = frozenset([None])
    if not ndims or not all(type(n) is int and 0 <= n <= 64 for n in ndims):
        try:
            said = bounded(repr(value), 200)
        except Exception:
            said = f"a {type(value).__qualname__}"
        raise _spec_error(f"{name}.dlpack_ndims: expected numbers of dimensions from 0 to 64 (such as (1,)), got "
                          f"{said}")
    return ndims


def _spec_error(message: str) -> Exception:
    from dlbridge.testing._runner import SpecError  # a cycle at import time
    return SpecError(message)


# Why the clauses of a tier cannot run here, or None where they can, by
# tier: the module of a tier fills in its entry (_gpu.unavailable).
UNAVAILABLE: dict[str, Callable[[], str | None]] = {"cpu": lambda: None}


def run_clause(check: Clause, subject: Producer | Consumer) -> Result:
    """The verdict of one clause on `subject`, found in this process."""
    def result(verdict: str, observed: str) -> Result:
        return Result(check.id, verdict, bounded(observed), check.title, check.source, check.cites)
    reason = UNAVAILABLE[check.tier]()
    if reason:
        return result(NOT_APPLICABLE, f"{check.tier.upper()} tier: {reason}")
    try:
        return result(PASS, check.check(subject))
    except NotApplicable as error:
        return result(NOT_APPLICABLE, str(error))
    except Warned as error:
        return result(WARN, str(error))
    except Failed as error:
        return result(FAIL, str(error))
    except BaseException as error:  # the library raised where the clause expects it not to (SystemExit too)
        return result(FAIL, f"raised {describe(error)}")


def is_deprecation(category: type) -> bool:
    """Whether a warning category announces a deprecation: Python's own, or
    a library's by its name (NumPy's and CuPy's VisibleDeprecationWarning is
    a UserWarning)."""
    return issubclass(category, (DeprecationWarning, PendingDeprecationWarning, FutureWarning)) or \
        "Deprecation" in category.__name__


def nothing_checked(results: Iterable[Result]) -> bool:
    """Whether no clause applied: neither a pass nor a failure among `results`."""
    return all(r.verdict == NOT_APPLICABLE for r in results)
