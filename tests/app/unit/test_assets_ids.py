"""The page's own script (assets/graph_view.js) names components by the ids in
qviz/app/ids.py: a renamed id there must not leave the script finding nothing."""

import re
from pathlib import Path

from qviz.app import ids

SCRIPT = Path(__file__).resolve().parents[3] / "assets" / "graph_view.js"


def test_the_graph_script_uses_the_ids_of_ids_py():
    names = dict(re.findall(r'\b([A-Z_]+) = "([^"]+)"', SCRIPT.read_text(encoding="utf-8")))
    assert {"GRAPH", "GRAPH_B", "MINIMAP", "MINIMAP_FOLD", "MATCH_LIST", "MATCH_ITEM", "MATCH_PICK"} <= set(names)
    for name, value in names.items():
        assert getattr(ids, name) == value, f"{name}: the script says {value!r}, ids.py {getattr(ids, name)!r}"
