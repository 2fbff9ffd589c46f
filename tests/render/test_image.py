"""Issue 20.2: the graph as an image file — SVG with a recipe's changes and bits,
PNG drawn by Chromium — from the library and the CLI."""

import struct
import xml.etree.ElementTree as ET

import pytest

import qviz
from qviz.cli import main
from qviz.passes import LayerBits
from qviz.render.image import ImageError, find_chromium, graph_svg_of, svg_to_png

SVG = "{http://www.w3.org/2000/svg}"


def _circles(svg):
    return ET.fromstring(svg.split("?>", 1)[1]).iter(f"{SVG}circle")


def test_the_rewrite_is_drawn_with_its_changes_and_bits(samples):
    g = qviz.load(samples["lenet_digits"])
    recipe = qviz.Recipe(fold_default=True, quantize_default=None).with_bits("conv2", LayerBits(4, None))
    result = qviz.apply(g, qviz.Recipe(fold_default=True, quantize_default=None))   # fold: no calibration
    svg = graph_svg_of(g, result, recipe, title="lenet <folded>")
    root = ET.fromstring(svg.split("?>", 1)[1])          # well-formed XML, names escaped
    assert root.get("width") and root.get("height")
    titles = {c.find(f"{SVG}title").text: c for c in _circles(svg)}
    for bn in ("bn1", "bn2", "bn3"):      # each batch norm removed, drawn faded where it was
        assert titles[f"{bn} (removed)"].get("opacity") == "0.35"
    assert titles["conv1 (modified)"].get("stroke") == "#f5a623"
    badges = {t.text for t in root.iter(f"{SVG}text") if t.get("class") == "badge"}
    assert badges == {"+bn", "w4+bn"}          # conv1, fc1 folded; conv2 folded and at 4 bits
    assert "lenet &lt;folded&gt;" in svg and "batch norm folded in" in svg


def test_the_float_graph_has_no_marks_and_the_op_view_every_op(samples):
    g = qviz.load(samples["lenet_digits"])
    layer_svg, op_svg = graph_svg_of(g), graph_svg_of(g, view="op", direction="TB")
    assert sum(1 for _ in _circles(layer_svg)) == len(g.layers)
    assert "stroke=\"#f5a623\"" not in layer_svg and "class=\"legend\"" not in layer_svg
    assert sum(1 for _ in _circles(op_svg)) > len(g.layers)
    with pytest.raises(ValueError, match="view must be 'layer' or 'op'"):
        graph_svg_of(g, view="ops")


def _png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.skipif(find_chromium() is None, reason="needs chromium (apt-get install chromium; .ci/run does)")
def test_png_is_the_svg_drawn_at_its_scale(samples, tmp_path):
    svg = graph_svg_of(qviz.load(samples["lenet_digits"]), title="lenet")
    root = ET.fromstring(svg.split("?>", 1)[1])
    out = svg_to_png(svg, tmp_path / "g.png", scale=1.5)
    assert _png_size(out) == (round(int(root.get("width")) * 1.5), round(int(root.get("height")) * 1.5))


def _ink(path) -> tuple[int, int, int, int]:
    """(left, top, right, bottom) of the pixels that are not white, decoding the PNG."""
    import zlib

    data = path.read_bytes()
    at, idat = 8, b""
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"IHDR":
            w, h, _, colour = struct.unpack(">IIBB", data[at + 8:at + 18])
        elif kind == b"IDAT":
            idat += data[at + 8:at + 8 + length]
        at += 12 + length
    bpp = {2: 3, 6: 4}[colour]
    raw, stride, prev, box = zlib.decompress(idat), w * bpp, bytearray(w * bpp), [w, h, -1, -1]
    for y in range(h):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a, b, c = (line[i - bpp] if i >= bpp else 0), prev[i], (prev[i - bpp] if i >= bpp else 0)
            p = a + b - c
            pred = (0, a, b, (a + b) // 2,
                    a if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c) else b if abs(p - b) <= abs(p - c)
                    else c)[kind]
            line[i] = (line[i] + pred) & 0xFF
        for x in range(w):
            if min(line[x * bpp:x * bpp + 3]) < 200:
                box = [min(box[0], x), min(box[1], y), max(box[2], x), max(box[3], y)]
        prev = line
    return tuple(box)


@pytest.mark.skipif(find_chromium() is None, reason="needs chromium (apt-get install chromium; .ci/run does)")
def test_the_png_is_the_whole_picture_at_any_scale(samples, tmp_path):
    """At --scale 1 the graph filled a third of the PNG, the rest blank: Chromium draws only
    its viewport, shorter than the window it takes the picture of."""
    svg = graph_svg_of(qviz.load(samples["lenet_digits"]), title="lenet")
    w, h = int(ET.fromstring(svg.split("?>", 1)[1]).get("width")), int(ET.fromstring(svg.split("?>", 1)[1]).get("height"))
    for scale in (1, 1.5):
        left, top, right, bottom = _ink(svg_to_png(svg, tmp_path / f"g{scale}.png", scale=scale))
        # the title at the top left, the last node and its label at the right, labels near the bottom
        assert left < 0.03 * w * scale and right > 0.9 * w * scale and bottom > 0.7 * h * scale, (scale, left, right, bottom)


def test_png_without_chromium_says_so_in_one_line(samples, tmp_path, monkeypatch):
    monkeypatch.setattr("qviz.render.image.find_chromium", lambda: None)
    with pytest.raises(ImageError, match=r"PNG needs Chromium .* write a \.svg"):
        svg_to_png(graph_svg_of(qviz.load(samples["lenet_digits"])), tmp_path / "g.png")
    monkeypatch.undo()
    monkeypatch.setenv("QVIZ_CHROMIUM", str(tmp_path / "no-such-browser"))
    with pytest.raises(ImageError, match="Chromium could not be started"):
        svg_to_png(graph_svg_of(qviz.load(samples["lenet_digits"])), tmp_path / "g.png")
    assert not (tmp_path / "g.png").exists()


def test_cli_render_writes_svg_and_refuses_other_suffixes(samples, tmp_path, capsys):
    out = tmp_path / "lenet.svg"
    model = str(samples["lenet_digits"])
    assert main(["render", model, "-o", str(out), "--view", "op"]) == 0
    assert out.read_text().startswith("<?xml") and "wrote" in capsys.readouterr().out
    assert main(["render", model, "-o", str(tmp_path / "g.gif")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "g.gif" in err and "*.svg or *.png" in err
    assert main(["render", model, "-o", str(tmp_path / "no-such-folder" / "g.svg")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no-such-folder/g.svg: No such file or directory" in err


def test_cli_render_around_a_layer_draws_only_its_neighbourhood(samples, tmp_path, capsys):
    """Issue 20.2: a sub-graph for a slide — the layers named and what lies within --hops of them."""
    import xml.etree.ElementTree as ET

    model, out = str(samples["resnet_block"]), tmp_path / "part.svg"
    assert main(["render", model, "-o", str(out), "--around", "conv2", "--hops", "1"]) == 0
    root = ET.fromstring(out.read_text().split("?>", 1)[1])
    ns = "{http://www.w3.org/2000/svg}"
    assert sorted(c.find(f"{ns}title").text for c in root.iter(f"{ns}circle")) == ["bn2", "conv2", "relu1"]
    assert "around conv2 (1 step)" in out.read_text()
    capsys.readouterr()
    assert main(["render", model, "-o", str(out), "--around", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--around: no layer named 'nope'" in err


def test_the_reports_recipe_table_gives_weight_bits_only_to_layers_with_weights():
    """A bypass Add is quantized (its output) but has no weights: the report's table said
    "8" weight bits for it, where the app's table says "—"."""
    import re

    import qviz
    from qviz.render.report import _recipe_section
    from qviz.samples import sample_path

    g = qviz.load(sample_path("resnet_block"))
    rows = dict(re.findall(r"<tr><td>([^<]*)</td><td>([^<]*)</td>", _recipe_section(g, qviz.Recipe.default(g))))
    assert rows["add1"] == rows["add2"] == "—" and rows["conv1"] == rows["logits"] == "8", rows
