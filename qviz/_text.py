"""Small text helpers shared by the loaders, the runtime and the app: errors stay one line."""

import re
import tempfile

__all__ = ["first_line", "quote_name", "one_line", "hide_temp_paths", "duration", "floor_percent"]


def first_line(exc: BaseException, limit: int = 300) -> str:
    """The first line of an exception's message (TF and Keras errors run to pages), cut
    at ``limit`` characters with an ellipsis. An error raised in a traced function starts
    "in user code:" and a traceback: its own line, the last, is the one that says why.

    >>> first_line(ValueError("bad shape\\n  at line 7"))
    'bad shape'
    >>> first_line(ValueError('in user code:\\n\\n    File "m.py", line 3\\n\\n    ValueError: expected (None, 8)\\n'))
    'ValueError: expected (None, 8)'
    >>> first_line(ValueError("x" * 10), limit=5)
    'xxxx…'

    Keras 3 puts its reason in bold (terminal codes) above a list of the call's arguments
    ("• kwargs=…", what the last line was): the bold line, without the codes.

    >>> first_line(ValueError('in user code:\\n    ValueError: Exception encountered\\n    \\x1b[1mInput 0 is '
    ...                       'incompatible\\x1b[0m\\n    Arguments received:\\n      • training=False\\n'))
    'Input 0 is incompatible'
    """
    text = str(exc).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    bold = re.search(r"\x1b\[1m(.+?)\x1b\[0m", text, re.S)
    if lines and lines[0] == "in user code:" and bold:
        lines = [" ".join(bold.group(1).split())]
    line = (lines[-1] if lines[0] == "in user code:" else lines[0]) if lines else type(exc).__name__
    line = one_line(line)
    return line if len(line) <= limit else line[:limit - 1] + "…"


def quote_name(name: str, limit: int = 200) -> str:
    """A file or layer name as it can stand in a one-line message: as it is when
    printable, quoted with escapes when it holds a newline or other control
    character, and cut after ``limit`` characters.

    >>> quote_name("model.keras")
    'model.keras'
    >>> print(quote_name("evil\\nname.pb"))
    'evil\\nname.pb'
    """
    name = str(name)
    if len(name) > limit:
        name = name[:limit] + "…"
    return name if name.isprintable() else repr(name)


def one_line(text: str) -> str:
    """``text`` with line breaks and other control characters escaped.

    >>> print(one_line("a\\nb\\tc"))
    a\\nb\\tc
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def hide_temp_paths(text: str) -> str:
    """``text`` with paths under the temp dir replaced: a message shown to a page
    must not reveal where the server keeps its files.

    >>> hide_temp_paths(f"{tempfile.gettempdir()}/qviz-upload-x/m.pb: the file is empty")
    '(temporary file): the file is empty'
    """
    return re.sub(re.escape(tempfile.gettempdir()) + r"/[^\s'\":]*", "(temporary file)", text)


def duration(seconds: float) -> str:
    """A wait, said the way a person would: to the second under a minute, then minutes.

    >>> duration(8.4), duration(59.7), duration(95), duration(1850), duration(3590), duration(7500)
    ('8 s', '1 min', '2 min', '31 min', '1 h', '2 h 5 min')
    """
    if seconds < 59.5:
        return f"{max(round(seconds), 1)} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h" + (f" {minutes % 60} min" if minutes % 60 else "")


def floor_percent(fraction: float, digits: int = 2) -> str:
    """``fraction`` as a percentage rounded down: a share that is not all never reads 100
    (an op 99.996 % within 1 LSB and 6 LSB apart at worst read "100.00 %").

    >>> floor_percent(0.99996), floor_percent(1.0), floor_percent(0.5, 1)
    ('99.99', '100.00', '50.0')
    """
    import math

    scale = 10 ** (digits + 2)
    return f"{math.floor(fraction * scale + 1e-9) / 10 ** digits:.{digits}f}"
