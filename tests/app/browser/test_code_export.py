"""Issue 20.5 in the app: the recipe on screen downloads as another tool's code (a
.zip of what ``qviz export-code`` writes), and the page lists what that tool does
differently from the recipe."""

import zipfile
from pathlib import Path

import json

from .helpers import choose, click, edit_cell, needs_browser, shot, start_app, wait_for

pytestmark = needs_browser


def _download(dash_duo, tool: str, name: str) -> zipfile.ZipFile:
    choose(dash_duo, "#code-tool", tool)
    click(dash_duo, "#code-button")
    wait_for(lambda: dash_duo.find_element("#code-status").text.startswith("downloaded"), timeout=180,
             what=lambda: f"the {tool} code; status {dash_duo.find_element('#code-status').text!r}")
    path = Path(dash_duo.download_path) / name
    wait_for(lambda: path.exists() and zipfile.is_zipfile(path), what=f"{name} on disk")
    return zipfile.ZipFile(path)


def test_the_recipe_downloads_as_qkeras_and_ai_edge_quantizer_code(dash_duo):
    start_app(dash_duo)
    edit_cell(dash_duo, "conv1", "weight_bits", "3")
    edit_cell(dash_duo, "conv1", "fold", True)

    z = _download(dash_duo, "QKeras", "lenet_digits_qkeras.zip")
    assert sorted(z.namelist()) == ["lenet_digits_qkeras.py", "lenet_digits_qkeras_tf_keras.h5"]
    script = z.read("lenet_digits_qkeras.py").decode()
    assert "'conv1': 3," in script and "'conv1': 'bn1'," in script     # the bits and the fold on screen
    notes = dash_duo.find_element("#code-notes").text
    assert "least-squares fit" in notes
    dash_duo.driver.execute_script("document.getElementById('code-notes').scrollIntoView({block: 'center'});")
    shot(dash_duo, "code_export.png")

    z = _download(dash_duo, "AI Edge Quantizer", "lenet_digits_ai_edge_quantizer.zip")
    assert sorted(z.namelist()) == ["lenet_digits_ai_edge_quantizer.json",
                                    "lenet_digits_ai_edge_quantizer_float.tflite"]
    rules = json.loads(z.read("lenet_digits_ai_edge_quantizer.json"))
    conv1 = next(r for r in rules if "conv1" in r["regex"])
    assert conv1["op_config"]["weight_tensor_config"]["num_bits"] == 4        # 3 bits, widened
    wait_for(lambda: "'conv1': 3-bit weights are written as 4-bit" in dash_duo.find_element("#code-notes").text,
             what="the widening listed on the page")
