"""Per-browser-session state on the server: the model, and caches derived from it.

Nothing here is module-level: a :class:`SessionStore` belongs to one app
(:func:`qviz.app.create_app`), and each browser session gets its own
:class:`Session`, keyed by the random id in its ``dcc.Store``. Results are
pure functions of (model, recipe), so they are cached by the recipe's JSON.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field

from ..ir import Graph
from ..passes import Recipe


@dataclass
class Session:
    graph: Graph
    name: str
    results: OrderedDict = field(default_factory=OrderedDict)   # recipe json → Result
    layouts: dict = field(default_factory=dict)                 # view key → (view graph, positions)

    def result(self, recipe: Recipe):
        """``qviz.apply(original, recipe)``, cached (a few recipes: undo/redo is instant)."""
        from ..pipeline import apply

        key = recipe.to_json(indent=None)
        if key not in self.results:
            self.results[key] = apply(self.graph, recipe)
            while len(self.results) > 8:
                self.results.popitem(last=False)
        self.results.move_to_end(key)
        return self.results[key]


class SessionStore:
    """Sessions by id, at most ``capacity`` (least recently used dropped)."""

    def __init__(self, capacity: int = 32):
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._lock = threading.Lock()
        self.capacity = capacity

    @staticmethod
    def new_id() -> str:
        return uuid.uuid4().hex

    def put(self, sid: str, session: Session) -> Session:
        with self._lock:
            self._sessions[sid] = session
            self._sessions.move_to_end(sid)
            while len(self._sessions) > self.capacity:
                self._sessions.popitem(last=False)
        return session

    def get(self, sid: str | None) -> Session | None:
        with self._lock:
            s = self._sessions.get(sid) if sid else None
            if s is not None:
                self._sessions.move_to_end(sid)
            return s
