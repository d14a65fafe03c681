"""Grading the exercises: the hidden checks and their judge, the registry of what each exercise removes,
the sandbox a student's kernel runs in, and the visible checks' cases.

A notebook's check cells import the two names they call from here::

    from courseware.grading import hidden_check   # a hidden test's one call
    from courseware.grading import forbid         # "write it yourself": a call detector around a block

Both come from :mod:`courseware.grading.hidden`, loaded on first use: the sandbox's own module
(:mod:`courseware.grading.sandbox`) is imported by interpreters that have no PyTorch.
"""

__all__ = ["forbid", "hidden_check"]


def __getattr__(name: str):
    if name in __all__:
        from courseware.grading import hidden

        return getattr(hidden, name)
    raise AttributeError(f"module 'courseware.grading' has no attribute {name!r}")
