"""Where the text of a figure goes so that no two labels overlap: boxes estimated in pixels.

A scatter trace draws `text` beside each marker, at its `textposition`. When two points lie close together
their labels land on one another (chapter 10's roofline on a CPU: "s=16" and "b=16 T=301" share a spot), or on
the ridge's label. The pixel size of a figure is not known when its spec is made (the book's column at
1280 px, a notebook, a slide deck), so `place` tries each label's eight positions at several plot widths
(`PLOT_WIDTHS`) and keeps, for every label, a position that overlaps no other label at any of them, and,
where it can, no marker, no line and nothing outside the plot.

The boxes follow plotly's own offsets (measured in Chromium for a 12 px font and 10 px markers, the English
and the Chinese font taken together); text widths are estimated generously: a Latin character 0.62 em (it
measures 0.53 to 0.56), a Chinese one 1 em. `label_boxes` reads them back from a finished spec, which is what
tests/test_viz_labels.py checks; tests/browser/test_projector.py draws the figures in Chromium and compares
the real bounding boxes.
"""

from __future__ import annotations

import itertools
import math
import unicodedata
from dataclasses import dataclass

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in pixels, from the plot area's top left corner

POSITIONS = ("top center", "bottom center", "middle right", "middle left", "top right", "top left", "bottom right",
             "bottom left")  # plotly's textposition values, the most natural first
PLOT_WIDTHS = (350, 450, 600, 800, 1000)  # px: the book's column at 1280 (about 400), a notebook PNG (about 500),
#                                           JupyterLab and a slide (up to about 1000)
GAP = 2.0  # px two labels keep between them
FONT_SIZE = 12  # plotly's default, which these figures keep
MARKER_SIZE = 10
_OFFSET = MARKER_SIZE / 2 / 0.8 + 1  # plotly puts the text this far from the marker's centre (7.25 px)
_ROWS = {"top": (-24.25, -7.25), "middle": (-11.0, 6.0), "bottom": (2.25, 19.25)}  # px for a 12 px font, both fonts


def text_width(text: str, size: float = FONT_SIZE) -> float:
    """Pixels `text` takes in a `size` px sans-serif font, rather more than less."""
    return sum(size if unicodedata.east_asian_width(ch) in "WF" else 0.62 * size for ch in text)


def point_label_box(x: float, y: float, text: str, position: str, size: float = FONT_SIZE) -> Box:
    """The box of `text` drawn at `position` beside a marker centred at pixel (x, y)."""
    row, _, column = position.partition(" ")
    width, scale = text_width(text, size), size / FONT_SIZE
    top, bottom = (scale * v for v in _ROWS[row])
    if column == "right":
        x0 = x + _OFFSET
    elif column == "left":
        x0 = x - _OFFSET - width
    else:
        x0 = x - width / 2
    return (x0, y + top, x0 + width, y + bottom)


def vertical_label_box(x: float, y: float, text: str, side: str, size: float = FONT_SIZE) -> Box:
    """The box of an annotation written upwards (textangle -90) beside a vertical line at pixel x, centred at
    height y, on the line's `side` ("left": xanchor right, "right": xanchor left), shifted 2 px off the line."""
    length, thickness = text_width(text, size) + 2, 1.5 * size
    x0 = x - 2 - thickness if side == "left" else x + 2
    return (x0, y - length / 2, x0 + thickness, y + length / 2)


def marker_box(x: float, y: float, size: float = MARKER_SIZE) -> Box:
    return (x - size / 2, y - size / 2, x + size / 2, y + size / 2)


def overlap(a: Box, b: Box, gap: float = 0.0) -> bool:
    """Whether two boxes overlap, or come closer than `gap`."""
    return a[0] < b[2] + gap and b[0] < a[2] + gap and a[1] < b[3] + gap and b[1] < a[3] + gap


def crosses(box: Box, p: tuple[float, float], q: tuple[float, float]) -> bool:
    """Whether the segment p–q passes through `box` (Liang–Barsky clipping)."""
    (x0, y0, x1, y1), (px, py), (dx, dy) = box, p, (q[0] - p[0], q[1] - p[1])
    lo, hi = 0.0, 1.0
    for d, start, low, high in ((dx, px, x0, x1), (dy, py, y0, y1)):
        if d == 0:
            if not low <= start <= high:
                return False
            continue
        t0, t1 = sorted(((low - start) / d, (high - start) / d))
        lo, hi = max(lo, t0), min(hi, t1)
        if lo > hi:
            return False
    return True


def outside(box: Box, width: float, height: float) -> bool:
    return box[0] < 0 or box[1] < 0 or box[2] > width or box[3] > height


@dataclass(frozen=True)
class LogPlot:
    """A plot area `width` × `height` px with log axes over `x_range` and `y_range` (log10 of the data)."""

    x_range: tuple[float, float]
    y_range: tuple[float, float]
    width: float
    height: float

    def px(self, x: float, y: float) -> tuple[float, float]:
        """Pixel (from the top left) of the data point (x, y)."""
        (a, b), (c, d) = self.x_range, self.y_range
        return ((math.log10(x) - a) / (b - a) * self.width, (d - math.log10(y)) / (d - c) * self.height)


@dataclass
class Scene:
    """What the labels must keep clear of, in data coordinates: markers (x, y), lines [(x, y), ...] and one
    vertical label (text, x of its line) whose place along the line `place` chooses too."""

    markers: list[tuple[float, float]]
    lines: list[list[tuple[float, float]]]
    vertical: tuple[str, float] | None = None


VERTICAL_PLACES = tuple((side, f) for f in (0.5, 0.35, 0.65, 0.2, 0.8) for side in ("left", "right"))


def _cost(box: Box, plot: LogPlot, scene_px: dict, others: list[Box], own: tuple[float, float] | None) -> float:
    """How bad a label at `box` is: another label under it is the worst, then leaving the plot, covering a
    marker, crossing a line."""
    cost = 1000.0 * sum(overlap(box, o, GAP) for o in others)
    cost += 300.0 * outside(box, plot.width, plot.height)
    cost += 100.0 * sum(overlap(box, marker_box(*m), 1) for m in scene_px["markers"] if m != own)
    cost += 30.0 * sum(crosses(box, p, q) for line in scene_px["lines"] for p, q in zip(line, line[1:], strict=False))
    return cost


def place(labels: list[tuple[float, float, str]], scene: Scene, plots: list[LogPlot]) -> tuple[list[str], tuple]:
    """A textposition for each (x, y, text) in `labels`, and a place (side, fraction of the height from the
    bottom) for the scene's vertical label, such that no label overlaps another at any of `plots` (the same axes
    at several widths) where that can be done, and as few as can be otherwise."""
    in_px = [{"markers": [plot.px(x, y) for x, y in scene.markers],
              "lines": [[plot.px(x, y) for x, y in line] for line in scene.lines],
              "labels": [(*plot.px(x, y), text) for x, y, text in labels]} for plot in plots]
    best = None
    for where in (VERTICAL_PLACES if scene.vertical else [None]):
        fixed = [[_vertical_box(scene, plot, where)] if where else [] for plot in plots]
        cost = VERTICAL_PLACES.index(where) if where else 0
        cost += sum(_cost(box, plot, s, [], None) for plot, s, extra in zip(plots, in_px, fixed, strict=True)
                    for box in extra)
        arrangement = _Arrangement(plots, in_px, fixed)
        chosen = arrangement.solve()
        cost += sum(arrangement.cost(k, chosen[k], chosen) for k in range(len(labels)))
        clashes = sum(_clashes([point_label_box(*label, pos) for label, pos in zip(s["labels"], chosen, strict=True)]
                               + extra) for s, extra in zip(in_px, fixed, strict=True))
        if best is None or (clashes, cost) < best[0]:
            best = ((clashes, cost), chosen, where)
        if clashes == 0:  # the first place of the vertical label where no two labels overlap at any width
            break
    return best[1], best[2]


class _Arrangement:
    """The textpositions of the labels in `in_px` (one scene in pixels per plot width), with the boxes `fixed`
    (per width) already placed."""

    def __init__(self, plots: list[LogPlot], in_px: list[dict], fixed: list[list[Box]]):
        self.plots, self.in_px, self.fixed = plots, in_px, fixed
        self.n = len(in_px[0]["labels"]) if in_px else 0

    def cost(self, k: int, position: str, chosen: list[str], against: range | None = None) -> float:
        """The cost of label k at `position`, summed over the widths, against the labels `against` (all the
        others unless given) at their `chosen` positions and the fixed boxes."""
        against = range(self.n) if against is None else against
        total = POSITIONS.index(position)  # the more natural position wins a tie
        for plot, s, extra in zip(self.plots, self.in_px, self.fixed, strict=True):
            x, y, text = s["labels"][k]
            others = [point_label_box(*s["labels"][j], chosen[j]) for j in against if j != k] + extra
            total += _cost(point_label_box(x, y, text, position), plot, s, others, (x, y))
        return total

    def close(self, i: int, j: int) -> bool:
        """Whether labels i and j are near enough, at some width, for their positions to interact."""
        return any(abs(s["labels"][i][0] - s["labels"][j][0]) < 150 and abs(s["labels"][i][1] - s["labels"][j][1]) < 60
                   for s in self.in_px)

    def pair_cost(self, i: int, j: int, pair: tuple[str, str], chosen: list[str]) -> float:
        trial = [*chosen]
        trial[i], trial[j] = pair
        return self.cost(i, pair[0], trial) + self.cost(j, pair[1], trial)

    def solve(self) -> list[str]:
        chosen = ["top center"] * self.n
        for k in range(self.n):  # one at a time, each against those placed before it
            chosen[k] = min(POSITIONS, key=lambda pos, k=k: self.cost(k, pos, chosen, range(k)))
        for _ in range(4):  # then each against all the others, and two close ones together, until none moves
            before = [*chosen]
            for k in range(self.n):
                chosen[k] = min(POSITIONS, key=lambda pos, k=k: self.cost(k, pos, chosen))
            for i, j in itertools.combinations(range(self.n), 2):
                if self.close(i, j):
                    pairs = itertools.product(POSITIONS, POSITIONS)
                    chosen[i], chosen[j] = min(pairs, key=lambda pair, i=i, j=j: self.pair_cost(i, j, pair, chosen))
            if chosen == before:
                break
        return chosen


def _vertical_box(scene: Scene, plot: LogPlot, where: tuple[str, float]) -> Box:
    text, x = scene.vertical
    side, fraction = where
    return vertical_label_box(plot.px(x, 1.0)[0], (1 - fraction) * plot.height, text, side)


def _clashes(boxes: list[Box]) -> int:
    """How many pairs of `boxes` overlap or come closer than GAP."""
    return sum(overlap(a, b, GAP) for a, b in itertools.combinations(boxes, 2))


def label_boxes(traces: list[dict], layout: dict, plot_width: float) -> list[tuple[str, Box]]:
    """Every text label of a finished log-log spec (point texts at their textposition, and vertical annotations),
    as (text, box in pixels) for a plot area `plot_width` px wide: what the tests compare."""
    plot = plot_of(layout, plot_width)
    boxes = []
    for trace in traces:
        if "text" not in (trace.get("mode") or ""):
            continue
        positions = trace.get("textposition") or "middle center"
        for k, (x, y, text) in enumerate(zip(trace["x"], trace["y"], trace.get("text") or [], strict=False)):
            if text and x and y and x > 0 and y > 0:
                position = positions if isinstance(positions, str) else positions[k]
                boxes.append((text, point_label_box(*plot.px(x, y), text, position)))
    for a in layout.get("annotations", []):
        if a.get("textangle") == -90 and a.get("xref") == "x" and a.get("yref") == "paper":
            x = plot.px(10 ** a["x"], 1.0)[0]
            side = "left" if a.get("xanchor") == "right" else "right"
            boxes.append((a["text"], vertical_label_box(x, (1 - a["y"]) * plot.height, a["text"], side)))
    return boxes


def plot_of(layout: dict, plot_width: float) -> LogPlot:
    """The plot area of a layout with explicit log ranges, height and top and bottom margins, `plot_width` px wide."""
    margin = layout["margin"]
    return LogPlot(tuple(layout["xaxis"]["range"]), tuple(layout["yaxis"]["range"]), plot_width,
                   layout["height"] - margin["t"] - margin["b"])
