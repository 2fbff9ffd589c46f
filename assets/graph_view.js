// The graph view's reading aids, done in the browser (no server round trip on a zoom):
// * labels: node names (and the bit badges beside them) are shown only while they can
//   be read: one layout unit (the distance between ranks, or between neighbours in a
//   rank) at least meta.label_px pixels wide, at most meta.labels_in_view nodes in view
//   (drawing thousands of names is slow); zoom in and they appear; and only near the
//   view (the server sends the others apart): pan, and the names there are drawn; a
//   name that would touch one already drawn is left out (blocks and layers before ops,
//   ghosts last) and comes back as you zoom in;
// * minimap: while the view shows part of the graph, a small overview of the whole
//   graph with the visible part boxed; click it to look there; fold it to a button;
// * a short graph in a narrow plot opens on its start, where its names can be read
//   (whole, they would not be drawn);
// * a redraw drawn in and near the view first, the rest of its nodes once that is on
//   screen (cutToView: plotly styles every point it draws);
// * zoom kept on a resize: when the plot changes size (side by side on or off, the
//   window resized) it keeps its scale, and the graph's start where it was if the view
//   shows it, else its centre. Plotly keeps the axes' equal scale by widening a
//   range instead, so each narrowing zoomed out for good.
// Element ids and classes are the ones in qviz/app/ids.py (GRAPH, MINIMAP, MINIMAP_FOLD, MATCH_LIST, MATCH_ITEM,
// MATCH_PICK).
(function () {
    var GRAPH = "graph", GRAPH_B = "graph-b", MINIMAP = "graph-minimap", MINIMAP_FOLD = "minimap-fold",
        MATCH_LIST = "match-list",
        MATCH_ITEM = "match-item", MATCH_PICK = "match-pick";

    function trace(gd, name) {
        if (!gd.data) { return -1; }
        for (var i = 0; i < gd.data.length; i++) {
            if (gd.data[i].name === name) { return i; }
        }
        return -1;
    }
    function bounds(xs, ys) {
        var b = {x0: Infinity, x1: -Infinity, y0: Infinity, y1: -Infinity};
        for (var i = 0; i < xs.length; i++) {
            if (xs[i] === null || ys[i] === null) { continue; }
            if (xs[i] < b.x0) { b.x0 = xs[i]; }
            if (xs[i] > b.x1) { b.x1 = xs[i]; }
            if (ys[i] < b.y0) { b.y0 = ys[i]; }
            if (ys[i] > b.y1) { b.y1 = ys[i]; }
        }
        return b;
    }
    function view(gd) {
        var xa = gd._fullLayout && gd._fullLayout.xaxis, ya = gd._fullLayout && gd._fullLayout.yaxis;
        if (!xa || !ya || !xa.range || !ya.range) { return null; }
        return {x0: Math.min(xa.range[0], xa.range[1]), x1: Math.max(xa.range[0], xa.range[1]),
                y0: Math.min(ya.range[0], ya.range[1]), y1: Math.max(ya.range[0], ya.range[1])};
    }

    // Whether node k of trace t lies in r ({x0, x1, y0, y1}: a view, or one widened).
    function within(t, k, r) {   // (a position not drawn yet is null: see cutToView)
        return t.x[k] !== null && t.y[k] !== null && t.x[k] >= r.x0 && t.x[k] <= r.x1 && t.y[k] >= r.y0 && t.y[k] <= r.y1;
    }

    var CELL_PX = 48;   // the grid names are looked up in

    // The box (pixels: [x0, x1, y0, y1]) of a text of w pixels and h high at plotly's
    // textposition p off a point at (X, Y) (y up).
    function textBox(X, Y, w, h, p, gap) {
        var x = p.indexOf("left") >= 0 ? [X - gap - w, X - gap] : p.indexOf("right") >= 0 ? [X + gap, X + gap + w]
            : [X - w / 2, X + w / 2];
        var y = p.indexOf("top") === 0 ? [Y + gap, Y + gap + h] : p.indexOf("bottom") === 0 ? [Y - gap - h, Y - gap]
            : [Y - h / 2, Y + h / 2];
        return [x[0], x[1], y[0], y[1]];
    }

    // The names to draw in region r: the labels there, less each that would touch (come
    // within CLEAR_PX of) one kept, at the view's zoom rounded to a quarter octave (so a
    // zoom redraws names only when it changes that much). Bigger nodes keep theirs first.
    // A node's marks (its bit badge, its TFLite ⚠: traces "bits" and "device flags", whose
    // meta.texts are all their texts) are drawn with its name or not at all, and are
    // weighed with it: {names, marks: one text array per trace of marks}.
    function thinned(meta, size, t, labels, r, v, marks) {
        // a name's measure, as the server placed names (qviz/render/marks.py label_sides): a
        // character's width, a line's height, its distance off the node, how near two may come
        var box = meta.label_box || null, out = labels.map(function () { return ""; });
        var marksOut = marks.map(function (m) { return m.texts.map(function () { return ""; }); });
        var CHAR_PX = box && box.char, LINE_PX = box && box.line, GAP_PX = box && box.gap, CLEAR_PX = box && box.clear;
        var sx = size.w / Math.max(v.x1 - v.x0, 1e-9), sy = size.h / Math.max(v.y1 - v.y0, 1e-9);
        var q = Math.pow(2, Math.round(4 * Math.log2(sx)) / 4) / sx;
        sx *= q; sy *= q;
        var sizes = t.marker && t.marker.size, opacity = t.marker && t.marker.opacity, where = t.textposition;
        var order = [], cells = {};
        for (var k = 0; k < labels.length; k++) {
            if (labels[k] && within(t, k, r)) { order.push(k); }
        }
        var chosen = {};
        (meta.selected || []).forEach(function (key) { chosen[key] = true; });
        var rank = function (k) {   // the selection first, ghosts (faded) last, then the smaller markers
            if (t.customdata && chosen[t.customdata[k]]) { return -1e6; }
            var faded = Array.isArray(opacity) && opacity[k] < 1 ? 1000 : 0;
            return faded - (Array.isArray(sizes) ? sizes[k] : 0);
        };
        order.sort(function (a, b) { return rank(a) - rank(b) || a - b; });
        var cellsOf = function (b) {
            return [Math.floor((b[0] - CLEAR_PX[0]) / CELL_PX), Math.floor((b[1] + CLEAR_PX[0]) / CELL_PX),
                    Math.floor((b[2] - CLEAR_PX[1]) / CELL_PX), Math.floor((b[3] + CLEAR_PX[1]) / CELL_PX)];
        };
        var touches = function (b) {
            var g = cellsOf(b), i, j, c, n;
            for (i = g[0]; i <= g[1]; i++) {
                for (j = g[2]; j <= g[3]; j++) {
                    c = cells[i + "," + j] || [];
                    for (n = 0; n < c.length; n++) {
                        if (Math.min(b[1], c[n][1]) - Math.max(b[0], c[n][0]) + CLEAR_PX[0] > 0 &&
                                Math.min(b[3], c[n][3]) - Math.max(b[2], c[n][2]) + CLEAR_PX[1] > 0) { return true; }
                    }
                }
            }
            return false;
        };
        var keep = function (b) {
            var g = cellsOf(b), i, j;
            for (i = g[0]; i <= g[1]; i++) {
                for (j = g[2]; j <= g[3]; j++) { (cells[i + "," + j] = cells[i + "," + j] || []).push(b); }
            }
        };
        var at = function (p, k) { return String(Array.isArray(p) ? p[k] : p || "top center"); };
        order.forEach(function (k) {
            var X = t.x[k] * sx, Y = t.y[k] * sy, key = t.customdata ? t.customdata[k] : null;
            if (!box) {   // (no measure: every name there, with its marks)
                out[k] = labels[k];
                marks.forEach(function (m, mi) { var i = m.index[key]; if (i !== undefined) { marksOut[mi][i] = m.texts[i]; } });
                return;
            }
            var boxes = [textBox(X, Y, labels[k].length * CHAR_PX, LINE_PX, at(where, k), GAP_PX)], own = [];
            marks.forEach(function (m, mi) {
                var i = key === null ? undefined : m.index[key];
                if (i === undefined || !m.texts[i]) { return; }
                var scale = m.font / 10;
                boxes.push(textBox(X, Y, String(m.texts[i]).length * CHAR_PX * scale, LINE_PX * scale,
                                   at(m.where, i), GAP_PX));
                own.push([mi, i]);
            });
            if (boxes.some(touches)) { return; }
            boxes.forEach(keep);
            out[k] = labels[k];
            own.forEach(function (o) { marksOut[o[0]][o[1]] = marks[o[0]].texts[o[1]]; });
        });
        return {names: out, marks: marksOut};
    }

    // The traces of a node's marks (see thinned) in a figure's data, each with all its
    // texts (trace.meta.texts), its positions, its font size and its point by node key.
    var MARKS = ["bits", "device flags"];
    function marksOf(figure) {
        var out = [];
        MARKS.forEach(function (name) {
            var j = trace(figure, name), m = j >= 0 ? figure.data[j] : null;
            var texts = m && m.meta && m.meta.texts;
            if (!Array.isArray(texts) || !Array.isArray(m.customdata)) { return; }
            var index = {};
            m.customdata.forEach(function (key, i) { index[key] = i; });
            out.push({at: j, texts: texts, where: m.textposition, index: index,
                      font: (m.textfont && typeof m.textfont.size === "number") ? m.textfont.size : 10});
        });
        return out;
    }

    // The names a figure should show in view v of a plot of this size ({w, h} pixels):
    // {mode, names, marks}. Names only while they can be read: a layout unit at least
    // meta.label_px pixels wide and at most meta.labels_in_view nodes in view. The server
    // draws names only near the view it opens on (qviz.render.names_near_view), all of them
    // in meta.labels; the names are those around the view (meta.names_margin views past each
    // side), thinned; names null when the figure has not all its names in meta.labels.
    // marks: [trace index, its texts] for each trace of marks (see thinned).
    function wanted(figure, size, t, v) {
        var meta = figure.layout.meta || {}, marks = marksOf(figure);
        var limit = meta.labels_in_view || 250, minPx = meta.label_px || 45, n = 0;
        // pixels per layout unit across the screen: below minPx the names would run into each other
        var px = size.w / Math.max(v.x1 - v.x0, 1e-9);
        for (var k = 0; k < t.x.length && n <= limit; k++) {
            if (within(t, k, v)) { n++; }
        }
        var mode = n <= limit && px >= minPx ? "markers+text" : "markers", labels = meta.labels;
        if (mode !== "markers+text" || !labels || labels.length !== t.x.length || !t.text) {
            return {mode: mode, names: null, marks: []};
        }
        var m = typeof meta.names_margin === "number" ? meta.names_margin : 0.5;
        var w = m * (v.x1 - v.x0), h = m * (v.y1 - v.y0);
        var r = {x0: v.x0 - w, x1: v.x1 + w, y0: v.y0 - h, y1: v.y1 + h};
        var drawn = thinned(meta, size, t, labels, r, v, marks);
        return {mode: mode, names: drawn.names,
                marks: marks.map(function (mk, i) { return [mk.at, drawn.marks[i]]; })};
    }
    function plotSize(gd) {
        var xa = gd._fullLayout && gd._fullLayout.xaxis, ya = gd._fullLayout && gd._fullLayout.yaxis;
        return xa && ya && xa._length > 0 && ya._length > 0 ? {w: xa._length, h: ya._length} : null;
    }

    // Plotly keeps a trace's text groups from one drawing to the next (a new figure too),
    // and a group whose text was once empty has no text element left: a name its point gets
    // later is not drawn (nodes in view went unnamed after a switch of view, or a pan). So
    // every drawing starts without them (plotly_beforeplot, below), and so do new names.
    // A trace drawn only in view (qviz.render.marks.DRAWN_IN_VIEW_ABOVE) needs it after every
    // pan: plotly binds its text groups to the points drawn by position.
    function dropTextGroups(gd) {
        gd.querySelectorAll(".scatterlayer g.textpoint").forEach(function (g) { g.remove(); });
    }

    // Names drawn for the view: restyled when a node in view has not the name it should
    // (the view moved, plotly widened an axis to keep the scale, or the zoom changed which
    // names fit), or when names should come or go.
    function updateLabels(gd, v) {
        var i = trace(gd, "nodes"), size = plotSize(gd);
        if (i < 0 || !gd.data[i].text || !v || !size) { return; }
        var t = gd.data[i], want = wanted(gd, size, t, v), missing = false, k;
        for (k = 0; want.names && k < t.x.length && !missing; k++) {
            missing = within(t, k, v) && (t.text[k] || "") !== want.names[k];
        }
        want.marks.forEach(function (m) {   // (only those in view: the region thinned moves with it)
            var mt = gd.data[m[0]], drawn = mt.text || [];
            for (k = 0; k < m[1].length && !missing; k++) { missing = within(mt, k, v) && (drawn[k] || "") !== m[1][k]; }
        });
        if (missing) {   // (one restyle: each is a drawing)
            dropTextGroups(gd);
            var at = [i], modes = [want.mode], texts = [want.names];
            want.marks.forEach(function (m) { at.push(m[0]); modes.push(gd.data[m[0]].mode); texts.push(m[1]); });
            window.Plotly.restyle(gd, {mode: modes, text: texts}, at);
        } else if (t.mode !== want.mode) {
            window.Plotly.restyle(gd, {mode: want.mode}, [i]);
        }
        // the bit badges and TFLite marks (qviz/render/figure.py) come and go with the names
        var show = want.mode === "markers+text";
        MARKS.forEach(function (name) {
            var b = trace(gd, name);
            if (b >= 0 && gd.data[b].visible !== show) { window.Plotly.restyle(gd, {visible: show}, [b]); }
        });
    }

    // A new figure for a plot already drawn (an edit, a selection: the server's redraw) gets
    // the names the page would draw before plotly draws it, rather than after: else every
    // redraw was drawn twice, the server's names near the view and then the page's thinned
    // ones (~60 ms of MobileNetV2's fold toggle). The view is the one plotly will show: the
    // figure's ranges, the narrower one widened to keep the axes' equal scale (scaleanchor)
    // about its centre. dcc.Graph draws with window.Plotly.react(gd, figure).
    function viewOf(layout, size) {
        var xr = layout.xaxis && layout.xaxis.range, yr = layout.yaxis && layout.yaxis.range;
        if (!Array.isArray(xr) || !Array.isArray(yr) || [xr[0], xr[1], yr[0], yr[1]].some(function (x) {
            return typeof x !== "number" || !isFinite(x); })) { return null; }
        var x0 = Math.min(xr[0], xr[1]), x1 = Math.max(xr[0], xr[1]), y0 = Math.min(yr[0], yr[1]), y1 = Math.max(yr[0], yr[1]);
        var u = Math.max((x1 - x0) / size.w, (y1 - y0) / size.h), cx = (x0 + x1) / 2, cy = (y0 + y1) / 2;
        return {x0: cx - u * size.w / 2, x1: cx + u * size.w / 2, y0: cy - u * size.h / 2, y1: cy + u * size.h / 2};
    }
    function namedBeforeDrawn(gd, figure) {
        var data = figure.data, layout = figure.layout, size = plotSize(gd);
        var j = Array.isArray(data) && layout ? trace(figure, "nodes") : -1;
        var v = j >= 0 && size ? viewOf(layout, size) : null;
        // (a figure sent without names, over MAX_LABELS nodes, is drawn without them)
        if (!v || !data[j].text || !Array.isArray(data[j].x) || !Array.isArray(data[j].y)) { return figure; }
        var want = wanted(figure, size, data[j], v);
        data = data.slice();
        data[j] = Object.assign({}, data[j], want.names ? {mode: want.mode, text: want.names} : {mode: want.mode});
        want.marks.forEach(function (m) { data[m[0]] = Object.assign({}, data[m[0]], {text: m[1]}); });
        MARKS.forEach(function (name) {
            var b = trace(figure, name);
            if (b >= 0) { data[b] = Object.assign({}, data[b], {visible: want.mode === "markers+text"}); }
        });
        return Object.assign({}, figure, {data: data});
    }

    // A new figure is drawn first in and near its view (half a view past each side), the
    // rest of its nodes and their marks once that is on screen, so that a pan finds them
    // drawn: plotly styles every point of a trace it draws, and MobileNetV2's fold toggle
    // spent ~20 of plotly's ~40 ms on the ~140 of 156 nodes out of view. Those left out
    // wait with null positions (plotly draws no point there; their indexes, which names,
    // keys and marks go by, are kept), their real ones in gd.__qvizCut. A trace the server
    // sends drawn in view only (marker.maxdisplayed) is plotly's to cut. While a figure is
    // cut, the page's updates (names, kept scale, minimap) wait for the whole drawing, which
    // ends with them (gd.__qvizUpdate: the pane's update).
    var CUT = ["nodes"].concat(MARKS), CUT_ABOVE = 60;   // (fewer points out of reach: not worth a second drawing)
    var plainReact = null;   // Plotly.react itself (wrapReact)
    function cutToView(gd, figure) {
        var data = figure.data, size = plotSize(gd);
        var v = Array.isArray(data) && figure.layout && size ? viewOf(figure.layout, size) : null;
        if (!v) { return figure; }   // (shown whole: no view to cut to)
        var w = 0.5 * (v.x1 - v.x0), h = 0.5 * (v.y1 - v.y0);
        var r = {x0: v.x0 - w, x1: v.x1 + w, y0: v.y0 - h, y1: v.y1 + h}, cuts = [], out = 0;
        CUT.forEach(function (name) {
            var j = trace({data: data}, name), t = j >= 0 ? data[j] : null;
            if (!t || !Array.isArray(t.x) || !Array.isArray(t.y) || (t.marker && t.marker.maxdisplayed)) { return; }
            var x = t.x.slice(), y = t.y.slice();
            for (var k = 0; k < x.length; k++) {
                if (!within(t, k, r)) { x[k] = y[k] = null; out++; }
            }
            cuts.push({at: j, x: x, y: y, whole: t});
        });
        if (out < CUT_ABOVE) { return figure; }
        data = data.slice();
        cuts.forEach(function (c) { data[c.at] = c.trace = Object.assign({}, data[c.at], {x: c.x, y: c.y}); });
        var cut = gd.__qvizCut = {data: data, cuts: cuts};
        // once the browser has painted the view: the next frame (an idle callback came as late
        // as the next toggle, whose answer then waited for this drawing)
        var frame = window.requestAnimationFrame || function (f) { return setTimeout(f, 16); };
        frame(function () { setTimeout(function () { uncut(gd, cut); }, 0); });
        return Object.assign({}, figure, {data: data});
    }
    // The nodes cut left out, drawn (their positions back in the figure's data, as it is now:
    // a preview since may have restyled it); then the pane's update.
    function uncut(gd, cut) {
        if (!cut || gd.__qvizCut !== cut) { return; }   // (drawn whole since, or a new figure came)
        gd.__qvizCut = null;
        if (cut.data !== gd.data) {   // (not drawn as cut: nothing to draw, but the update)
            if (gd.__qvizUpdate) { gd.__qvizUpdate(gd); }
            return;
        }
        var data = gd.data.slice();
        cut.cuts.forEach(function (c) {
            if (data[c.at] === c.trace) { data[c.at] = Object.assign({}, c.trace, {x: c.whole.x, y: c.whole.y}); }
        });
        plainReact(gd, data, gd.layout);
    }
    // A new figure ends the cut of the one drawn (its updates are the new one's), and any
    // trace of it the new figure reuses gets its positions back.
    function withoutCut(gd, figure) {
        var cut = gd.__qvizCut;
        gd.__qvizCut = null;
        if (!cut || !Array.isArray(figure.data)) { return figure; }
        return Object.assign({}, figure, {data: figure.data.map(function (t) {
            var c = cut.cuts.filter(function (c) { return c.trace === t; })[0];
            return c ? Object.assign({}, t, {x: c.whole.x, y: c.whole.y}) : t;
        })});
    }
    function wrapReact() {
        var react = window.Plotly && window.Plotly.react;
        if (!react || react.__qviz) { return; }
        plainReact = react;
        var wrapped = function (gd, figure) {
            var args = Array.prototype.slice.call(arguments);
            if (gd && gd.__qvizBound && figure && typeof figure === "object" && !Array.isArray(figure)) {
                var whole = withoutCut(gd, figure);
                try { args[1] = cutToView(gd, namedBeforeDrawn(gd, whole)); } catch (e) { gd.__qvizCut = null; args[1] = whole; }
            }
            return react.apply(this, args);
        };
        wrapped.__qviz = true;
        window.Plotly.react = wrapped;
    }

    // The minimap is a canvas drawn here, not a second plotly plot: on NASNetMobile's op view
    // (1,127 nodes) plotly took ~120 ms to draw it, after the graph and before the page could
    // paint it. The whole graph is drawn once per figure (and fill, and size) into an image;
    // a pan or zoom only redraws the image and the frame of the view.
    function minimapCanvas(box) {
        var c = box.querySelector("canvas");
        if (!c) { c = document.createElement("canvas"); box.appendChild(c); }   // (its size: assets/qviz.css)
        return c;
    }
    function drawWhole(gd, t, all, w, h) {
        var ratio = window.devicePixelRatio || 1, img = document.createElement("canvas");
        img.width = Math.round(w * ratio); img.height = Math.round(h * ratio);
        var padX = 0.5 + 0.02 * (all.x1 - all.x0), padY = 0.5 + 0.02 * (all.y1 - all.y0), m = 2;
        // layout units → CSS pixels of the box (y up in the plot, down on a canvas)
        var map = {x0: all.x0 - padX, x1: all.x1 + padX, y0: all.y0 - padY, y1: all.y1 + padY, m: m, w: w, h: h};
        map.sx = (w - 2 * m) / (map.x1 - map.x0); map.sy = (h - 2 * m) / (map.y1 - map.y0);
        var px = function (x) { return m + (x - map.x0) * map.sx; }, py = function (y) { return m + (map.y1 - y) * map.sy; };
        var g = img.getContext("2d");
        g.scale(ratio, ratio);
        g.fillStyle = "#fff"; g.fillRect(0, 0, w, h);
        var e = gd.data[trace(gd, "edges")];
        if (e && e.x) {   // polylines, one per edge, split by nulls
            g.strokeStyle = "#c8cfd6"; g.lineWidth = 1; g.beginPath();
            var pen = false;
            for (var k = 0; k < e.x.length; k++) {
                if (e.x[k] === null || e.y[k] === null) { pen = false; continue; }
                if (pen) { g.lineTo(px(e.x[k]), py(e.y[k])); } else { g.moveTo(px(e.x[k]), py(e.y[k])); pen = true; }
            }
            g.stroke();
        }
        // the nodes by colour: a canvas parses each new fillStyle, a few colours for a thousand nodes
        var colours = t.marker && t.marker.color, byColour = {};
        for (var n = 0; n < t.x.length; n++) {
            if (t.x[n] === null || t.y[n] === null) { continue; }
            var c = (Array.isArray(colours) ? colours[n] : colours) || "#888";
            (byColour[c] = byColour[c] || []).push(n);
        }
        Object.keys(byColour).forEach(function (c) {
            g.fillStyle = c;
            byColour[c].forEach(function (n) { g.fillRect(px(t.x[n]) - 1.5, py(t.y[n]) - 1.5, 3, 3); });
        });
        return {img: img, map: map, px: px, py: py};
    }
    var foldedKey = "qviz.minimap.folded";   // (localStorage: the minimap folded away in this browser)
    function setFolded(box, folded) {
        box.classList.toggle("folded", folded);
        var button = box.querySelector("." + MINIMAP_FOLD);
        if (button) {
            button.textContent = folded ? "▣" : "–";
            button.title = folded ? "show the minimap" : "fold the minimap away (it covers the nodes under it)";
        }
        try { window.localStorage.setItem(foldedKey, folded ? "1" : ""); } catch (e) { /* private mode */ }
    }
    function updateMinimap(gd, v) {
        if (gd.__qvizCut) { return; }   // (a figure drawn near its view only: drawn with the rest)
        var box = document.getElementById(MINIMAP);
        var i = trace(gd, "nodes");
        if (!box) { return; }
        if (i < 0 || !v) { box.style.display = "none"; return; }
        var t = gd.data[i], all = bounds(t.x, t.y);
        var whole = v.x0 <= all.x0 && v.x1 >= all.x1 && v.y0 <= all.y0 && v.y1 >= all.y1;
        box.style.display = whole ? "none" : "block";
        if (box.__foldRead === undefined) {   // as the user left it, in this browser
            var folded = false;
            try { folded = !!window.localStorage.getItem(foldedKey); } catch (e) { /* private mode */ }
            box.__foldRead = true;
            setFolded(box, folded);
        }
        if (whole || box.classList.contains("folded")) { return; }
        var c = minimapCanvas(box), w = c.clientWidth, h = c.clientHeight;
        if (!(w > 0) || !(h > 0)) { return; }
        // drawn again when the graph, its fill (a metric colours it) or the box's size (its CSS
        // follows the pane's width, side by side) changes
        var fill = t.marker && Array.isArray(t.marker.color) ? t.marker.color.join("") : "";
        var signature = t.x.length + "|" + (t.customdata || [])[0] + "|" + [all.x0, all.x1, all.y0, all.y1].join(",")
            + "|" + fill + "|" + w + "x" + h + "|" + (window.devicePixelRatio || 1);
        if (!box.__whole || box.__whole.signature !== signature) {
            box.__whole = drawWhole(gd, t, all, w, h);
            box.__whole.signature = signature;
            c.width = box.__whole.img.width; c.height = box.__whole.img.height;
        }
        var d = box.__whole, g = c.getContext("2d"), ratio = c.width / w;
        g.setTransform(1, 0, 0, 1, 0, 0);
        g.drawImage(d.img, 0, 0);
        g.setTransform(ratio, 0, 0, ratio, 0, 0);
        var x0 = d.px(v.x0), x1 = d.px(v.x1), y0 = d.py(v.y1), y1 = d.py(v.y0);
        g.fillStyle = "rgba(208,2,27,0.08)"; g.fillRect(x0, y0, x1 - x0, y1 - y0);
        g.strokeStyle = "#d0021b"; g.lineWidth = 1.5; g.strokeRect(x0, y0, x1 - x0, y1 - y0);
    }

    // The first view: an SVG in the page's HTML (qviz/app/first_view.py), on screen before any
    // script. Once the page is built it sits over the graph's place; once plotly has drawn, it goes.
    function placeFirstView() {
        var first = document.getElementById("first-view"), wrap = document.querySelector(".graph-wrap");
        if (first && wrap && first.parentNode !== wrap) { wrap.appendChild(first); }
    }
    if (window.MutationObserver) {
        var watcher = new MutationObserver(function () {
            placeFirstView();
            if (!document.getElementById("first-view")) { watcher.disconnect(); }
        });
        document.addEventListener("DOMContentLoaded", function () {
            watcher.observe(document.body, {childList: true, subtree: true});
        });
    }
    function dropFirstView() {
        // whatever plotly drew: the same view, or "could not be opened" (never stay over that)
        var first = document.getElementById("first-view");
        if (first) { first.parentNode.removeChild(first); }
    }

    // What the plot looks at, for the figure drawn (gd.data: a new figure brings its own
    // ranges) at the size it was drawn: units per pixel and, on each axis, the point held in
    // place when the plot is resized (side by side): the view's edge at the graph's start if
    // it opens on the start (shows it with less than a quarter of the view before it, so a
    // half-width pane still shows the start, and not the end: the graph starts
    // at the left, or at the top when drawn downwards; the first node is not cut in half),
    // else the view's centre (a node looked at stays in the middle: centred on the second
    // node, the view showed a wide margin before the first, and holding that edge cut the
    // node looked at out of a half-width pane).
    // A graph shown whole (autorange: a short graph, or a double-click home) is left to
    // plotly, which fits it again to the new size.
    function held(lo, hi, first, last, startIsHigh) {
        var margin = (hi - lo) / 4;
        var start = startIsHigh ? hi >= last && hi - last < margin && lo > first
                                : lo <= first && first - lo < margin && hi < last;
        return !start ? {at: (lo + hi) / 2, side: 0} : (startIsHigh ? {at: hi, side: 1} : {at: lo, side: -1});
    }
    function around(h, units, px) {
        var span = units * px;
        return h.side < 0 ? [h.at, h.at + span] : h.side > 0 ? [h.at - span, h.at] : [h.at - span / 2, h.at + span / 2];
    }
    function keepScale(gd, v) {
        if (!v) { return false; }
        var xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
        var w = xa._length, h = ya._length, last = gd.__qvizLook;
        if (xa.autorange || ya.autorange) { gd.__qvizLook = null; return false; }
        if (!(w > 0) || !(h > 0)) { return false; }
        if (last && last.data === gd.data && (Math.abs(last.w - w) > 1 || Math.abs(last.h - h) > 1)) {
            gd.__qvizLook = {data: gd.data, w: w, h: h, hx: last.hx, hy: last.hy, ux: last.ux, uy: last.uy};
            window.Plotly.relayout(gd, {"xaxis.range": around(last.hx, last.ux, w),
                                        "yaxis.range": around(last.hy, last.uy, h)});
            return true;
        }
        var i = trace(gd, "nodes"), all = i < 0 ? v : bounds(gd.data[i].x, gd.data[i].y);
        gd.__qvizLook = {data: gd.data, w: w, h: h, hx: held(v.x0, v.x1, all.x0, all.x1, false),
                         hy: held(v.y0, v.y1, all.y0, all.y1, true), ux: (v.x1 - v.x0) / w, uy: (v.y1 - v.y0) / h};
        return false;
    }

    // A short graph opens whole (the server sends no range: plotly fits it to the plot). Where
    // the plot is too narrow for its names at that scale (side by side, a small window), it
    // opens on its start instead, at the scale names are drawn at, as a long graph does (the
    // minimap shows the rest). Once per figure the server sent (its nodes' keys: plotly.react
    // copies the rest of it, above) and plot width: a double-click home still shows it whole,
    // and side by side turned on (the plot narrowed) looks again.
    function openReadable(gd) {
        var xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, meta = gd.layout.meta || {};
        var i = trace(gd, "nodes"), size = plotSize(gd), v = view(gd), seen = gd.__qvizOpened;
        var keys = i >= 0 ? gd.data[i].customdata : null;
        if (!size || !keys || (seen && seen.keys === keys && seen.w === size.w)) { return false; }
        gd.__qvizOpened = {keys: keys, w: size.w};
        if (!xa.autorange || !ya.autorange || !v || !gd.data[i].text) { return false; }
        var across = size.w / (meta.label_px || 45), down = across * size.h / size.w;   // layout units in view
        if (v.x1 - v.x0 <= across) { return false; }   // the names are drawn already
        var t = gd.data[i], all = bounds(t.x, t.y), lr = meta.direction !== "TB", near = [], k, x, y;
        for (k = 0; k < t.x.length; k++) {   // the nodes at the start: the view is centred on them
            if (lr ? t.x[k] < all.x0 + across : t.y[k] > all.y1 - down) { near.push(lr ? t.y[k] : t.x[k]); }
        }
        near.sort(function (a, b) { return a - b; });
        var mid = near.length ? near[Math.floor(near.length / 2)] : 0;
        if (lr) { x = [all.x0 - 0.6, all.x0 - 0.6 + across]; y = [mid - down / 2, mid + down / 2]; }
        else { x = [mid - across / 2, mid + across / 2]; y = [all.y1 + 0.6 - down, all.y1 + 0.6]; }
        window.Plotly.relayout(gd, {"xaxis.range": x, "yaxis.range": y});
        return true;
    }

    function update(gd) {
        dropFirstView();
        if (gd.__qvizCut) { return; }   // (drawn near its view only: updated once all is drawn)
        if (openReadable(gd)) { return; }   // re-laid out on the graph's start: updated then
        var v = view(gd);
        if (keepScale(gd, v)) { return; }   // re-laid out at the kept scale: updated then
        updateLabels(gd, v);
        // after the graph is on screen: the next frame, once the browser has painted it
        var frame = window.requestAnimationFrame || function (f) { return setTimeout(f, 16); };
        frame(function () { setTimeout(function () { updateMinimap(gd, view(gd)); }, 0); });
    }

    // A match of the Patterns list clicked: its view key to the MATCH_PICK store (the
    // buttons have no Dash id, so a redraw of the list costs Dash no new inputs).
    document.addEventListener("click", function (event) {
        var item = event.target.closest && event.target.closest("#" + MATCH_LIST + " ." + MATCH_ITEM);
        if (!item || !item.dataset.key || !window.dash_clientside || !window.dash_clientside.set_props) { return; }
        window.dash_clientside.set_props(MATCH_PICK, {data: {key: item.dataset.key, t: Date.now()}});
    });

    // A click on the minimap centres the graph there, keeping its zoom; its fold button folds
    // it to a small button that unfolds it (it covers the nodes under it), remembered.
    document.addEventListener("click", function (event) {
        var box = event.target.closest && event.target.closest("#" + MINIMAP);
        var gd = document.querySelector("#" + GRAPH + " .js-plotly-plot");
        if (box && event.target.closest("." + MINIMAP_FOLD)) {
            setFolded(box, !box.classList.contains("folded"));
            if (gd && !box.classList.contains("folded")) { update(gd); }
            return;
        }
        if (!box || !gd || !box.__whole || box.classList.contains("folded")) { return; }
        var m = box.__whole.map, c = box.querySelector("canvas"), r = c.getBoundingClientRect();
        var x = m.x0 + (event.clientX - r.left - m.m) / m.sx, y = m.y1 - (event.clientY - r.top - m.m) / m.sy;
        var v = view(gd);
        if (!v) { return; }
        var hw = (v.x1 - v.x0) / 2, hh = (v.y1 - v.y0) / 2;
        window.Plotly.relayout(gd, {"xaxis.range": [x - hw, x + hw], "yaxis.range": [y - hh, y + hh]});
    });

    // Pane B (side by side): its names come and go as pane A's do (drawn all at once,
    // zoomed out, they were a smear); its view follows pane A's, and it has no minimap.
    function updateB(gd) {
        if (!gd.__qvizCut) { updateLabels(gd, view(gd)); }   // (as update)
    }

    // The plot's divs are made (and remade) by Dash: bind to each one once.
    setInterval(function () {
        [[GRAPH, update], [GRAPH_B, updateB]].forEach(function (pane) {
            var gd = document.querySelector("#" + pane[0] + " .js-plotly-plot");
            if (!gd || gd.__qvizBound || !gd.on || !window.Plotly) { return; }
            wrapReact();
            gd.__qvizBound = true;
            gd.__qvizUpdate = pane[1];
            gd.on("plotly_beforeplot", function () { dropTextGroups(gd); });   // (see dropTextGroups)
            gd.on("plotly_afterplot", function () { pane[1](gd); });
            // (a figure drawn near its view only is drawn whole at a pan or zoom, then updated)
            gd.on("plotly_relayout", function () { if (gd.__qvizCut) { uncut(gd, gd.__qvizCut); } else { pane[1](gd); } });
            pane[1](gd);
        });
    }, 200);
})();
