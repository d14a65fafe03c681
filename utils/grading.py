"""Helpers for the exercises' hidden tests (nbgrader ``### BEGIN HIDDEN TESTS``).

An exercise that asks for a function the course already ships (in ``utils`` or PyTorch) is
graded with those functions switched off: ``forbid`` makes every call to them raise, whatever
name the student imported them under, so a one-line call scores nothing while an implementation
passes. ``tests/test_nbgrader_roundtrip.py`` submits each known shortcut and requires it to fail.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from typing import Any


class ForbiddenCall(AssertionError):
    """Raised by a function that an exercise asks you to write yourself."""


def _raiser(name: str) -> types.FunctionType:
    message = (f"this exercise asks you to write it yourself, but your code called {name}; "
               "implement it with tensor operations instead")
    namespace: dict[str, Any] = {}
    exec(f"def forbidden(*args, **kwargs):\n    raise AssertionError({message!r})\n", namespace)
    return namespace["forbidden"]


@contextlib.contextmanager
def forbid(*targets: Any) -> Iterator[None]:
    """Within the block, every call to one of ``targets`` raises ``AssertionError``.

    A target is a Python function (its code is swapped, so every reference to it is caught,
    ``from utils.x import f`` included) or an ``(owner, "attribute")`` pair (a module or class
    attribute, for PyTorch's built-in functions and methods). Everything is restored on exit.
    """
    undo = []
    try:
        for target in targets:
            if isinstance(target, tuple):
                owner, attr = target
                missing = object()
                old = owner.__dict__.get(attr, missing) if isinstance(owner, type) else getattr(owner, attr)
                name = f"{getattr(owner, '__name__', owner)}.{attr}"
                setattr(owner, attr, _raiser(name))

                def restore(owner=owner, attr=attr, old=old, missing=missing):
                    if old is missing:  # inherited: remove the shadowing attribute
                        delattr(owner, attr)
                    else:
                        setattr(owner, attr, old)
                undo.append(restore)
            elif isinstance(target, types.FunctionType) and not target.__code__.co_freevars:
                old_code = target.__code__
                target.__code__ = _raiser(f"{target.__module__}.{target.__qualname__}").__code__
                undo.append(lambda target=target, old_code=old_code: setattr(target, "__code__", old_code))
            else:
                raise TypeError(f"forbid() takes plain Python functions or (owner, 'attribute') pairs, got {target!r}")
        yield
    finally:
        for restore in reversed(undo):
            restore()
