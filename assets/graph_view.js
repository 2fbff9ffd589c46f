// The graph view's reading aids, done in the browser (no server round trip on a zoom):
// * labels: node names (and the bit badges beside them) are shown only while they can
//   be read: one layout unit (the distance between ranks, or between neighbours in a
//   rank) at least meta.label_px pixels wide, at most meta.labels_in_view nodes in view
//   (drawing thousands of names is slow); zoom in and they appear;
// * minimap: while the view shows part of the graph, a small overview of the whole
//   graph with the visible part boxed; click it to look there;
// * zoom kept on a resize: when the plot changes size (side by side on or off, the
//   window resized) it keeps its centre and its scale. Plotly keeps the axes' equal
//   scale by widening a range instead, so each narrowing zoomed out for good.
// Element ids and classes are the ones in qviz/app/ids.py (GRAPH, MINIMAP, MATCH_LIST, MATCH_ITEM, MATCH_PICK).
(function () {
    var GRAPH = "graph", MINIMAP = "graph-minimap", MATCH_LIST = "match-list", MATCH_ITEM = "match-item",
        MATCH_PICK = "match-pick";

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

    function updateLabels(gd, v) {
        var i = trace(gd, "nodes");
        if (i < 0 || !gd.data[i].text || !v) { return; }
        var t = gd.data[i], n = 0;
        var meta = gd.layout.meta || {}, limit = meta.labels_in_view || 250, minPx = meta.label_px || 45;
        // pixels per layout unit across the screen: below minPx the names would run into each other
        var px = gd._fullLayout.xaxis._length / Math.max(v.x1 - v.x0, 1e-9);
        for (var k = 0; k < t.x.length && n <= limit; k++) {
            if (t.x[k] >= v.x0 && t.x[k] <= v.x1 && t.y[k] >= v.y0 && t.y[k] <= v.y1) { n++; }
        }
        var want = n <= limit && px >= minPx ? "markers+text" : "markers";
        if (t.mode !== want) { window.Plotly.restyle(gd, {mode: want}, [i]); }
        // the bit badges (trace "bits", qviz/render/figure.py) come and go with the names
        var b = trace(gd, "bits"), show = want === "markers+text";
        if (b >= 0 && gd.data[b].visible !== show) { window.Plotly.restyle(gd, {visible: show}, [b]); }
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
        var frame = {type: "rect", xref: "x", yref: "y", x0: v.x0, x1: v.x1, y0: v.y0, y1: v.y1,
                     line: {color: "#d0021b", width: 1.5}, fillcolor: "rgba(208,2,27,0.08)"};
        // redrawn when the graph or its fill changes (a metric colours it), else only the frame moves
        var fill = t.marker && Array.isArray(t.marker.color) ? t.marker.color.join("") : "";
        // (and when the box's size changes: its CSS follows the pane's width, side by side)
        var w = box.clientWidth, h = box.clientHeight;
        var signature = t.x.length + "|" + (t.customdata || [])[0] + "|" + [all.x0, all.x1, all.y0, all.y1].join(",")
            + "|" + fill + "|" + w + "x" + h;
        if (box.__signature === signature) {
            window.Plotly.relayout(box, {shapes: [frame]});
            return;
        }
        box.__signature = signature;
        var e = gd.data[trace(gd, "edges")] || {x: [], y: []};
        var padX = 0.5 + 0.02 * (all.x1 - all.x0), padY = 0.5 + 0.02 * (all.y1 - all.y0);
        window.Plotly.react(box, [
            {type: t.type || "scatter", x: e.x, y: e.y, mode: "lines", line: {width: 1, color: "#c8cfd6"}, hoverinfo: "skip"},
            {type: t.type || "scatter", x: t.x, y: t.y, mode: "markers", hoverinfo: "skip",
             marker: {size: 3, color: t.marker && t.marker.color}}
        ], {
            width: w, height: h, margin: {l: 2, r: 2, t: 2, b: 2}, showlegend: false, plot_bgcolor: "#fff", paper_bgcolor: "#fff",
            xaxis: {visible: false, range: [all.x0 - padX, all.x1 + padX], fixedrange: true},
            yaxis: {visible: false, range: [all.y0 - padY, all.y1 + padY], fixedrange: true},
            shapes: [frame]
        }, {staticPlot: true});
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
    // place when the plot is resized (side by side): the view's start edge if it shows the
    // graph's start and not its end (the first node is not cut in half), its end edge the other
    // way round, else its centre.
    // A graph shown whole (autorange: a short graph, or a double-click home) is left to
    // plotly, which fits it again to the new size.
    function held(lo, hi, first, last) {
        var start = lo <= first, end = hi >= last;
        return start === end ? {at: (lo + hi) / 2, side: 0} : (start ? {at: lo, side: -1} : {at: hi, side: 1});
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
        gd.__qvizLook = {data: gd.data, w: w, h: h, hx: held(v.x0, v.x1, all.x0, all.x1),
                         hy: held(v.y0, v.y1, all.y0, all.y1), ux: (v.x1 - v.x0) / w, uy: (v.y1 - v.y0) / h};
        return false;
    }

    function update(gd) {
        dropFirstView();
        var v = view(gd);
        if (keepScale(gd, v)) { return; }   // re-laid out at the kept scale: updated then
        updateLabels(gd, v);
        updateMinimap(gd, v);
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
        if (!box || !gd || !box._fullLayout) { return; }
        var xa = box._fullLayout.xaxis, ya = box._fullLayout.yaxis, r = box.getBoundingClientRect();
        var x = xa.p2l(event.clientX - r.left - xa._offset), y = ya.p2l(event.clientY - r.top - ya._offset);
        var v = view(gd);
        if (!v) { return; }
        var hw = (v.x1 - v.x0) / 2, hh = (v.y1 - v.y0) / 2;
        window.Plotly.relayout(gd, {"xaxis.range": [x - hw, x + hw], "yaxis.range": [y - hh, y + hh]});
    });

    // The plot's div is made (and remade) by Dash: bind to each one once.
    setInterval(function () {
        var gd = document.querySelector("#" + GRAPH + " .js-plotly-plot");
        if (!gd || gd.__qvizBound || !gd.on || !window.Plotly) { return; }
        gd.__qvizBound = true;
        gd.on("plotly_afterplot", function () { update(gd); });
        gd.on("plotly_relayout", function () { update(gd); });
        update(gd);
    }, 200);
})();
