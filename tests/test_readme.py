"""The README's Python blocks run as written, in order, from the repository root."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)


def test_readme_python_blocks_run(monkeypatch, capsys):
    blocks = _blocks()
    assert len(blocks) >= 3
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    for i, code in enumerate(blocks):
        exec(compile(code, f"README.md python block {i + 1}", "exec"), namespace)
    out = capsys.readouterr().out
    assert "conv1 → relu1" in out and "layer conv1 takes part as layer (Conv2D)" in out
    assert namespace["result"].graph is not namespace["graph"]      # the recipe block applied for real
