"""Callbacks, grouped by feature. Each is thin: component properties in, a
:mod:`qviz.app.services` (or library) call, properties out."""

from . import analysis, device, explainer, graph, model, panels, recipe, side_by_side, url


def register(app, store, options) -> None:
    from dash import Input, Output

    from .. import ids

    # The alert bar (written by the app's error handler) goes away when clicked.
    app.clientside_callback("function (n) { return ''; }", Output(ids.ALERT, "children", allow_duplicate=True),
                            Input(ids.ALERT, "n_clicks"), prevent_initial_call=True)
    model.register(app, store, options)
    recipe.register(app, store)
    graph.register(app, store)
    side_by_side.register(app, store)
    panels.register(app, store)
    explainer.register(app, store)
    analysis.register(app, store)
    device.register(app, store)
    url.register(app, store, options)
