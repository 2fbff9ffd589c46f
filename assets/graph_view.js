// The graph view's reading aids, done in the browser (no server round trip on a zoom):
// * labels: node names (and the bit badges beside them) are shown only while they can
//   be read: one layout unit (the distance between ranks, or between neighbours in a
//   rank) at least meta.label_px pixels wide, at most meta.labels_in_view nodes in view
//   (drawing thousands of names is slow); zoom in and they appear; and only near the
//   view (the server sends the others apart): pan, and the names there are drawn; a
//   name that would touch one already drawn is left out (blocks and layers before ops,
//   ghosts last) and comes back as you zoom in;
// * minimap: while the view shows part of the graph, a small overview of the whole
//   graph with the visible part boxed; click it to look there;
// * zoom kept on a resize: when the plot changes size (side by side on or off, the
//   window resized) it keeps its scale, and the graph's start where it was if the view
//   shows it, else its centre. Plotly keeps the axes' equal scale by widening a
//   range instead, so each narrowing zoomed out for good.
// Element ids and classes are the ones in qviz/app/ids.py (GRAPH, MINIMAP, MATCH_LIST, MATCH_ITEM, MATCH_PICK).
(function () {
    var GRAPH = "graph", GRAPH_B = "graph-b", MINIMAP = "graph-minimap", MATCH_LIST = "match-list",
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
    function within(t, k, r) {
        return t.x[k] >= r.x0 && t.x[k] <= r.x1 && t.y[k] >= r.y0 && t.y[k] <= r.y1;
    }

    var CELL_PX = 48;   // the grid names are looked up in

    // The names to draw in region r: the labels there, less each that would touch (come
    // within CLEAR_PX of) one kept, at the view's zoom rounded to a quarter octave (so a
    // zoom redraws names only when it changes that much). Bigger nodes keep theirs first.
    function thinned(gd, t, labels, r, v) {
        // a name's measure, as the server placed names (qviz/render/marks.py label_sides): a
        // character's width, a line's height, its distance off the node, how near two may come
        var box = (gd.layout.meta || {}).label_box;
        if (!box) { return labels.map(function (s, k) { return within(t, k, r) ? s : ""; }); }
        var CHAR_PX = box.char, LINE_PX = box.line, GAP_PX = box.gap, CLEAR_PX = box.clear;
        var xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
        var sx = xa._length / Math.max(v.x1 - v.x0, 1e-9), sy = ya._length / Math.max(v.y1 - v.y0, 1e-9);
        var q = Math.pow(2, Math.round(4 * Math.log2(sx)) / 4) / sx;
        sx *= q; sy *= q;
        var size = t.marker && t.marker.size, opacity = t.marker && t.marker.opacity, where = t.textposition;
        var order = [], out = labels.map(function () { return ""; }), cells = {};
        for (var k = 0; k < labels.length; k++) {
            if (labels[k] && within(t, k, r)) { order.push(k); }
        }
        var rank = function (k) {   // ghosts (faded) last, then the smaller markers
            var faded = Array.isArray(opacity) && opacity[k] < 1 ? 1000 : 0;
            return faded - (Array.isArray(size) ? size[k] : 0);
        };
        order.sort(function (a, b) { return rank(a) - rank(b) || a - b; });
        order.forEach(function (k) {
            var X = t.x[k] * sx, Y = t.y[k] * sy, w = labels[k].length * CHAR_PX;
            var p = String(Array.isArray(where) ? where[k] : where || "top center"), b;
            if (p.indexOf("right") >= 0) {
                b = [X + GAP_PX, X + GAP_PX + w, Y - LINE_PX / 2, Y + LINE_PX / 2];
            } else if (p.indexOf("left") >= 0) {
                b = [X - GAP_PX - w, X - GAP_PX, Y - LINE_PX / 2, Y + LINE_PX / 2];
            } else if (p.indexOf("bottom") === 0) {
                b = [X - w / 2, X + w / 2, Y - GAP_PX - LINE_PX, Y - GAP_PX];
            } else {
                b = [X - w / 2, X + w / 2, Y + GAP_PX, Y + GAP_PX + LINE_PX];
            }
            var i0 = Math.floor((b[0] - CLEAR_PX[0]) / CELL_PX), i1 = Math.floor((b[1] + CLEAR_PX[0]) / CELL_PX);
            var j0 = Math.floor((b[2] - CLEAR_PX[1]) / CELL_PX), j1 = Math.floor((b[3] + CLEAR_PX[1]) / CELL_PX);
            var i, j, c, n;
            for (i = i0; i <= i1; i++) {
                for (j = j0; j <= j1; j++) {
                    c = cells[i + "," + j] || [];
                    for (n = 0; n < c.length; n++) {
                        if (Math.min(b[1], c[n][1]) - Math.max(b[0], c[n][0]) + CLEAR_PX[0] > 0 &&
                                Math.min(b[3], c[n][3]) - Math.max(b[2], c[n][2]) + CLEAR_PX[1] > 0) { return; }
                    }
                }
            }
            for (i = i0; i <= i1; i++) {
                for (j = j0; j <= j1; j++) { (cells[i + "," + j] = cells[i + "," + j] || []).push(b); }
            }
            out[k] = labels[k];
        });
        return out;
    }

    // The server draws names only near the view it opens on (qviz.render.names_near_view):
    // all of them are in meta.labels. When a node in view has not the name it should (the
    // view moved, plotly widened an axis to keep the scale, or the zoom changed which names
    // fit), the names around the view (meta.names_margin views past each side), thinned,
    // are drawn instead; returns them, or null while every node in view has its name.
    function namesNear(gd, t, v, meta) {
        var labels = meta.labels, k, missing = false;
        if (!labels || labels.length !== t.x.length || !t.text) { return null; }
        var m = typeof meta.names_margin === "number" ? meta.names_margin : 0.5;
        var w = m * (v.x1 - v.x0), h = m * (v.y1 - v.y0);
        var r = {x0: v.x0 - w, x1: v.x1 + w, y0: v.y0 - h, y1: v.y1 + h};
        var names = thinned(gd, t, labels, r, v);
        for (k = 0; k < labels.length && !missing; k++) {
            missing = within(t, k, v) && (t.text[k] || "") !== names[k];
        }
        return missing ? names : null;
    }

    // Plotly keeps a trace's text groups from one drawing to the next (a new figure too),
    // and a group whose text was once empty has no text element left: a name its point gets
    // later is not drawn (nodes in view went unnamed after a switch of view, or a pan). So
    // every drawing starts without them (plotly_beforeplot, below), and so do new names.
    function dropTextGroups(gd) {
        gd.querySelectorAll(".scatterlayer g.textpoint").forEach(function (g) { g.remove(); });
    }

    function updateLabels(gd, v) {
        var i = trace(gd, "nodes");
        if (i < 0 || !gd.data[i].text || !v) { return; }
        var t = gd.data[i], n = 0;
        var meta = gd.layout.meta || {}, limit = meta.labels_in_view || 250, minPx = meta.label_px || 45;
        // pixels per layout unit across the screen: below minPx the names would run into each other
        var px = gd._fullLayout.xaxis._length / Math.max(v.x1 - v.x0, 1e-9);
        for (var k = 0; k < t.x.length && n <= limit; k++) {
            if (within(t, k, v)) { n++; }
        }
        var want = n <= limit && px >= minPx ? "markers+text" : "markers";
        var text = want === "markers+text" ? namesNear(gd, t, v, meta) : null;
        if (text) {
            dropTextGroups(gd);
            window.Plotly.restyle(gd, {mode: want, text: [text]}, [i]);
        } else if (t.mode !== want) {
            window.Plotly.restyle(gd, {mode: want}, [i]);
        }
        // the bit badges (trace "bits", qviz/render/figure.py) come and go with the names
        var b = trace(gd, "bits"), show = want === "markers+text";
        if (b >= 0 && gd.data[b].visible !== show) { window.Plotly.restyle(gd, {visible: show}, [b]); }
    }

    // The minimap is a canvas drawn here, not a second plotly plot: on NASNetMobile's op view
    // (1,127 nodes) plotly took ~120 ms to draw it, after the graph and before the page could
    // paint it. The whole graph is drawn once per figure (and fill, and size) into an image;
    // a pan or zoom only redraws the image and the frame of the view.
    function minimapCanvas(box) {
        var c = box.querySelector("canvas");
        if (!c) { c = document.createElement("canvas"); c.style.width = c.style.height = "100%"; c.style.display = "block"; box.appendChild(c); }
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
    function updateMinimap(gd, v) {
        var box = document.getElementById(MINIMAP);
        var i = trace(gd, "nodes");
        if (!box) { return; }
        if (i < 0 || !v) { box.style.display = "none"; return; }
        var t = gd.data[i], all = bounds(t.x, t.y);
        var whole = v.x0 <= all.x0 && v.x1 >= all.x1 && v.y0 <= all.y0 && v.y1 >= all.y1;
        box.style.display = whole ? "none" : "block";
        if (whole) { return; }
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
    // it shows the start and not the end (the graph starts at the left, or at the top when
    // drawn downwards: the first node is not cut in half), else the view's centre (a node
    // looked at stays in the middle).
    // A graph shown whole (autorange: a short graph, or a double-click home) is left to
    // plotly, which fits it again to the new size.
    function held(lo, hi, first, last, startIsHigh) {
        var start = startIsHigh ? hi >= last && lo > first : lo <= first && hi < last;
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

    function update(gd) {
        dropFirstView();
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

    // A click on the minimap centres the graph there, keeping its zoom.
    document.addEventListener("click", function (event) {
        var box = event.target.closest && event.target.closest("#" + MINIMAP);
        var gd = document.querySelector("#" + GRAPH + " .js-plotly-plot");
        if (!box || !gd || !box.__whole) { return; }
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
        updateLabels(gd, view(gd));
    }

    // The plot's divs are made (and remade) by Dash: bind to each one once.
    setInterval(function () {
        [[GRAPH, update], [GRAPH_B, updateB]].forEach(function (pane) {
            var gd = document.querySelector("#" + pane[0] + " .js-plotly-plot");
            if (!gd || gd.__qvizBound || !gd.on || !window.Plotly) { return; }
            gd.__qvizBound = true;
            gd.on("plotly_beforeplot", function () { dropTextGroups(gd); });   // (see dropTextGroups)
            gd.on("plotly_afterplot", function () { pane[1](gd); });
            gd.on("plotly_relayout", function () { pane[1](gd); });
            pane[1](gd);
        });
    }, 200);
})();
