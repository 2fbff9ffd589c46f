"""Callbacks, grouped by feature. Each is thin: it reads the session and calls the library."""

from . import analysis, explainer, graph, model, recipe


def register(app, store, options) -> None:
    model.register(app, store, options)
    recipe.register(app, store)
    graph.register(app, store)
    explainer.register(app, store)
    analysis.register(app, store)
