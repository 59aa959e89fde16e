"""Signatures of extension functions that take dlbridge array arguments.

``dlbridge.annotate`` attaches what each array argument demands (the
rendering of its view type, ``cpp.describe(V.demands())``) to a function as
its annotations, so that ``inspect.signature`` and ``help()`` show them;
``python -m dlbridge stubs MODULE`` writes a ``.pyi`` from them.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import keyword
import os
import sys
import tempfile
from typing import Any, Callable, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])


class _Demands(str):
    """An annotation that is a view type's demands; the stub writer knows it by its type."""
    __slots__ = ()


def annotate(**demands: str | bytes) -> Callable[[_F], _F]:
    """Decorates a function so that its signature shows what each named
    array argument demands::

        @dlbridge.annotate(x=cpp.describe(rows_view.demands()))
        def row_sums(x): ...

    The function itself is returned (no wrapper, no cost per call); its
    ``__annotations__`` gain one entry per keyword. A Cython ``def`` function
    must be a binding one (``binding=True``, Cython 3's default).
    """
    texts = {}
    for name, text in demands.items():
        if isinstance(text, bytes):  # std::string, as Cython hands it to Python
            text = text.decode()
        if not isinstance(text, str):
            raise TypeError(f"annotate(): argument {name!r}: expected the demands as str or bytes "
                            f"(cpp.describe(...)), got {type(text).__name__}")
        texts[name] = _Demands(text)

    def attach(function: _F) -> _F:
        label = getattr(function, "__qualname__", repr(function))
        try:
            annotations = dict(function.__annotations__ or {})
            function.__annotations__ = annotations  # unchanged, until the names are known to be right
        except (AttributeError, TypeError):
            raise TypeError(f"annotate(): cannot annotate {label}, a {type(function).__name__}: "
                            f"a Cython function must be compiled with binding=True (Cython 3's default)") from None
        parameters = inspect.signature(function).parameters
        unknown = [name for name in texts if name not in parameters]
        if unknown:
            raise TypeError(f"annotate(): {label}() has no argument {unknown[0]!r}; "
                            f"its arguments are {', '.join(parameters) or 'none'}")
        function.__annotations__ = {**annotations, **texts}
        return function

    return attach


class _Text:
    """An annotation or default that inspect.Signature prints as this text."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _stub_parameter(parameter: inspect.Parameter) -> inspect.Parameter:
    annotation = parameter.annotation
    annotation = (_Text(f"Annotated[Any, {str(annotation)!r}]") if isinstance(annotation, _Demands)
                  else inspect.Parameter.empty)  # anything else is left to the reader: untyped is Any
    default = parameter.default if parameter.default is inspect.Parameter.empty else _Text("...")
    return parameter.replace(annotation=annotation, default=default)


def _stub_function(name: str, function: Any) -> str:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a text signature
        return f"def {name}(*args: Any, **kwargs: Any) -> Any: ..."
    returns = signature.return_annotation
    signature = signature.replace(
        parameters=[_stub_parameter(p) for p in signature.parameters.values()],
        return_annotation=_Text(f"Annotated[Any, {str(returns)!r}]") if isinstance(returns, _Demands)
        else inspect.Signature.empty)
    return f"def {name}{signature}: ..."


class StubError(Exception):
    """What keeps a module from being described: the writer says it and
    leaves any existing .pyi as it was."""


def _public_names(module: Any, skipped: list[str]) -> list[str]:
    """The names a stub describes: `__all__`'s (each must be a str), else, where
    it is missing or empty, the module's names without a leading underscore.
    A name that cannot be written as a Python name (not an identifier, or a
    keyword) is left out and added to `skipped`, never written as it is: it
    could be any text."""
    try:
        names = list(getattr(module, "__all__", None) or ())
    except Exception as e:
        raise StubError(f"its __all__ is not a list of names: {type(e).__name__}: {e}") from None
    for name in names:
        if not isinstance(name, str):
            raise StubError(f"its __all__ holds {name!r}, a {type(name).__name__}, not a str")
    if not names:
        names = sorted(n for n in vars(module) if isinstance(n, str) and not n.startswith("_"))
    kept = []
    for name in map(str.__str__, names):  # a str subclass's own methods are not asked
        if name.isidentifier() and not keyword.iskeyword(name):
            kept.append(name)
        else:
            skipped.append(name)
    return kept


def stub_text(module: Any, skipped: list[str] | None = None) -> str:
    """The text of a .pyi for `module`: its public functions with the demands
    of their annotated array arguments; everything else is Any, through a
    module-level __getattr__. Names that are not Python names are appended
    to `skipped`; StubError where the module cannot be described."""
    skipped = [] if skipped is None else skipped
    title = getattr(module, "__name__", None)  # in a comment: one line, whatever the module set
    title = " ".join(str.__str__(title).split()) if isinstance(title, str) else "?"
    lines = [f"# Stubs for {title}, written by `python -m dlbridge stubs {title}`.",
             "# An array argument's annotation says what it demands (dlbridge.annotate).",
             "from typing import Annotated, Any", ""]
    for name in _public_names(module, skipped):
        try:
            value = getattr(module, name, None)
            if callable(value) and not isinstance(value, type):
                lines.append(_stub_function(name, value))
        except Exception as e:  # a hostile __signature__, __annotations__, __getattr__, ...
            raise StubError(f"describing {name} raised {type(e).__name__}: {e}") from None
    lines += ["def __getattr__(name: str) -> Any: ...", ""]
    return "\n".join(lines)


def _replace(path: str, text: str) -> None:
    """Writes `text` to a new file beside `path`, then puts it in path's
    place: an existing file is replaced whole or not at all. A symbolic link
    at `path` is refused, not followed."""
    if os.path.islink(path):
        raise StubError(f"{path} is a symbolic link; not replaced (remove it, or write elsewhere with -o)")
    if os.path.isdir(path):
        raise StubError(f"{path} is a folder")
    folder = os.path.dirname(path) or "."
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    handle, temporary = tempfile.mkstemp(prefix=".stubs-", suffix=".pyi", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def stubs_main(argv: list[str]) -> int:
    """python -m dlbridge stubs MODULE [-o DIR]"""
    parser = argparse.ArgumentParser(
        prog="python -m dlbridge stubs",
        description="Write MODULE.pyi: the module's public functions, each array argument annotated with "
                    "what it demands (see dlbridge.annotate).")
    parser.add_argument("module", help="the module to import and describe, e.g. mypackage._kernels")
    parser.add_argument("-o", "--output", default=".", metavar="DIR",
                        help="the folder to write into; a dotted module goes into subfolders (default: .)")
    args = parser.parse_args(argv)
    try:
        module = importlib.import_module(args.module)
    except ImportError as e:
        parser.error(f"cannot import {args.module}: {e}")
    path = os.path.join(args.output, *args.module.split(".")) + ".pyi"
    skipped: list[str] = []
    try:
        text = stub_text(module, skipped)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        _replace(path, text)
    except (StubError, OSError) as e:
        print(f"{parser.prog}: cannot write {path} for {args.module}: {e}; no file was written", file=sys.stderr)
        return 1
    for name in skipped:
        print(f"{parser.prog}: left out {name!r}: not a Python name", file=sys.stderr)
    print(path)
    return 0
