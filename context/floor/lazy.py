"""Package faces that import on first use.

A face (`ctxagent.agent`, `ctxagent.context`) lists its public names in `__all__`, but importing it
must stay cheap: the app draws its first frame before the provider SDK, pydantic or the tokenizer
are loaded. So a face maps each name to the module that defines it and imports that module when the
name is first read (PEP 562). Type checkers read the same names from the face's `TYPE_CHECKING`
imports; `tests/test_layout.py` checks that the two lists agree.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_face(namespace: dict[str, Any], exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for the package whose globals are `namespace`; its public name N
    lives in module `exports[N]`."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # the next read is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
