"""The kernel-free form of every widget: what the book shows instead of a widget that needs Python.

A widget in JupyterLab recomputes its figure in the kernel when a control moves. A page of the book has no
kernel, so when the notebooks are built (TEACHLLM_STATIC_WIDGETS=1, set by scripts/build_notebooks.py) each
widget also saves, beside its usual output, a *static form* under the MIME type `MIME`:

    {"widget": "AttentionExplorer",           the widget's class name (the page's data-teachllm-widget)
     "lang": "en",                            the language of every label
     "controls": [...],                       the same controls as in JupyterLab: `slider`, `select`, `buttons`
     "frames": {"1,2": {"figure": ..., "html": ...}, ...},   one per setting of the controls
     "table": [...]}                          the values the frames share, stored once (see `pack`)

A frame's key is the controls' values joined by commas, in the order of `controls`. The figure of each frame
is made by the same `*_spec` function the widget calls, so the page draws what JupyterLab would. Only the
distribution explorer computes in the page (book/_static/teachllm-widgets.js): its state space is every
setting of seven sliders, so it carries the real logits instead (`distribution_form`).

Nothing here runs in JupyterLab unless TEACHLLM_STATIC_WIDGETS is on: a student's notebook stays small.
"""

from __future__ import annotations

import base64
import json
import math

import numpy as np
import torch

from ..inputs import env_flag
from .figures import figure
from .language import language, template

MIME = "application/vnd.teachllm.widget+json"
SHARED = 80  # a list or object whose JSON is longer than this many characters is stored once, in `table`


def wanted() -> bool:
    """Whether widgets save their static form: only while the notebooks are built for the book."""
    return env_flag("TEACHLLM_STATIC_WIDGETS")


# ---- controls, as the page draws them ---------------------------------------------------------------------
def slider(name: str, label: str, low, high, step, value) -> dict:
    """An <input type=range name=...>: `name` is what the frame key and data-params call it."""
    return {"kind": "slider", "name": name, "label": label, "min": low, "max": high, "step": step, "value": value}


def select(name: str, label: str, options: list[tuple[str, object]], value) -> dict:
    """A <select name=...> of (label, value) options."""
    return {"kind": "select", "name": name, "label": label, "options": [list(o) for o in options], "value": value}


def buttons(target: str, actions: list[tuple[str, str]]) -> dict:
    """A row of buttons that move the control `target`: actions are (label, what), what ∈ first, previous,
    next, last, run (step to the last frame one by one), replay (show that the frame is a recording)."""
    return {"kind": "buttons", "target": target, "actions": [list(a) for a in actions]}


def widget_buttons(button_row) -> list[tuple[str, str]]:
    """The labels of an ipywidgets row of buttons, in order."""
    return [b.description for b in button_row.children]


# ---- frames, packed ------------------------------------------------------------------------------------
def figure_json(spec: tuple[list[dict], dict]) -> dict:
    """A `*_spec` result as the JSON plotly.js draws: validated by plotly, with the book's template and font."""
    return json.loads(figure(spec).to_json())


def _plain(value):
    """JSON-ready: numpy scalars to Python, NaN and ±inf to None (plotly leaves those cells blank)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def pack(value, table: list, index: dict):
    """`value` with every list or object longer than SHARED characters (as JSON) replaced by {"$": i}, the
    place of its one copy in `table`. Frames that share a trace, a layout or a template then carry it once:
    the attention explorer's 270 frames repeat each head's heatmap three times and the template 270 times."""
    if isinstance(value, dict):
        value = {k: pack(v, table, index) for k, v in value.items()}
    elif isinstance(value, list):
        value = [pack(v, table, index) for v in value]
    else:
        return value
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, allow_nan=False)
    if len(text) <= SHARED:
        return value
    if text not in index:
        index[text] = len(table)
        table.append(value)
    return {"$": index[text]}


def unpack(value, table: list):
    """The inverse of `pack` (the page does the same in JavaScript)."""
    if isinstance(value, dict):
        if value.keys() == {"$"}:
            return unpack(table[value["$"]], table)
        return {k: unpack(v, table) for k, v in value.items()}
    if isinstance(value, list):
        return [unpack(v, table) for v in value]
    return value


def form(widget: str, controls: list[dict], frames: dict[str, dict], **extra) -> dict:
    """A static form: `frames` maps a key (the controls' values, comma-joined) to {"figure": …, "html": {…}}, the
    figure a `*_spec` result (traces, layout) or a figure's JSON already."""
    table: list = []
    index: dict = {}
    def drawn(frame: dict) -> dict:  # a spec becomes the figure's JSON; a figure's JSON (a dict) stays
        if isinstance(frame.get("figure"), tuple):
            frame = {**frame, "figure": figure_json(frame["figure"])}
        return frame

    packed = {key: pack(_plain(drawn(frame)), table, index) for key, frame in frames.items()}
    return {"widget": widget, "lang": language(), "controls": controls, "frames": packed, "table": table,
            **_plain(extra)}


def key(*values) -> str:
    """A frame's key: the controls' values, comma-joined, as the page writes them."""
    return ",".join(str(v) for v in values)


class StaticForm:
    """Mixin for a widget: its display bundle also carries `static_form()`, as a JSON string, under MIME when
    `wanted()`."""

    def static_form(self) -> dict:
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is not None and wanted():  # one line of JSON: the notebook's diff stays one line too
            bundle[MIME] = json.dumps(self.static_form(), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        return bundle


# ---- the distribution explorer: the real logits, for the page to process -------------------------------
def float32_base64(values) -> str:
    """A float32 vector (a list, an array or a tensor on any device) as base64 of its little-endian bytes: 4 bytes
    a value, read back exactly."""
    if isinstance(values, torch.Tensor):
        values = values.detach().to("cpu", torch.float32).numpy()
    return base64.b64encode(np.asarray(values, dtype="<f4").tobytes()).decode("ascii")


def float32_from_base64(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f4")


def templates(*english: str) -> dict[str, str]:
    """The current language's template for each English string, unformatted: the page fills the fields in."""
    return {e: template(e) for e in english}
