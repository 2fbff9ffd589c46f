"""Small text helpers shared by the loaders and the runtime."""


def first_line(exc: BaseException, limit: int = 300) -> str:
    """The first line of an exception's message (TF and Keras errors run to pages).

    >>> first_line(ValueError("bad shape\\n  at line 7"))
    'bad shape'
    """
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:limit]
