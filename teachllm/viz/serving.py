"""Views of the serving engine: who runs in each iteration, the block tables, the slots they waste.

    from teachllm.viz.serving import IterationTimeline, iteration_timeline_figure
    run = ServingEngine(lm, ServingConfig(policy="continuous", max_num_seqs=4)).run(prompts, params)
    iteration_timeline_figure(run)   # requests × iterations: waiting, prefill, decode
    IterationTimeline(run)           # the same figure, one iteration at a time

Like the rest of teachllm.viz, this file only reads what the engine recorded — `ServingRun.timeline`
(one `IterationRecord` per iteration, with a copy of the block tables), `ServingRun.requests` — and never
drives the engine. Each view has a reader (plain data), a `*_spec` (traces, layout as dicts), a
`*_figure` (a `go.Figure` for the book and the tests) and, where stepping helps, a widget:

    request_cells, iteration_timeline_spec/figure
                                              requests joining and leaving, iteration by iteration
    block_table_spec/figure                   block tables (logical → physical) and the pool, after one iteration
    slot_usage, fragmentation_spec/figure     slots used, allocated in blocks, reserved by a contiguous cache
    blend_quality_spec/figure                 CacheBlend: quality lost against prefill compute spent
    paged_cache_points                        a request's paged cache as `CachePoint`s, for
                                              `figures.cache_growth_figure(points, paged=...)`
    IterationTimeline, BlockTableView         widgets: a slider and buttons over the iterations of a run
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import ipywidgets as widgets
import plotly.graph_objects as go

from .. import cost
from ..units import ceil_div
from . import static
from .data import CachePoint
from .figures import COLORS, figure
from .language import tr
from .widgets import refresh

KIND_COLORS = {"waiting": "#d9d9d9", "prefill": COLORS["prefill"], "decode": COLORS["decode"]}
SHARED = "#31a354"  # blocks held by more than one request


# ---- readers ------------------------------------------------------------------------------------
@dataclass
class Cell:
    """What one request did in one iteration."""
    request_id: int
    iteration: int
    kind: str  # "waiting" (queued, or admitted but left out of the iteration), "prefill" or "decode"
    tokens: int  # tokens the request computed in it (0 while waiting, 1 for a decode, the chunk for a prefill)
    note: str  # what happened, in words (the hover text)


def _work(record) -> dict[int, tuple[str, int, int]]:
    """request id → (kind, first position, tokens) for every request that computed in `record`."""
    work = {rid: ("prefill", start, n) for rid, start, n in record.prefill}
    for rid in record.decode_ids:
        work[rid] = ("decode", -1, 1)
    return work


def request_cells(run, upto: int | None = None) -> list[Cell]:
    """What each request of `run` did in each iteration from its arrival to its last token (up to
    iteration `upto`, included), in the order of `run.requests`."""
    records = [r for r in run.timeline if upto is None or r.index <= upto]
    cells: list[Cell] = []
    for stats in run.requests:
        rid = stats.request_id
        for record in records:
            if not stats.arrival_iteration <= record.index <= stats.finish_iteration:
                continue
            kind, start, n = _work(record).get(rid, ("waiting", -1, 0))
            note = tr("request {rid}, iteration {i}: ", rid=rid, i=record.index)
            if kind == "prefill":
                then = tr("then a token was sampled") if rid in record.sampled else tr("a chunk: no token sampled yet")
                note += tr("prefill of tokens {first}–{last} ({n} tokens), {then}", first=start,
                           last=start + n - 1, n=n, then=then)
            elif kind == "decode":
                note += tr("decode (one token)")
            else:
                note += tr("waiting")
            cells.append(Cell(rid, record.index, kind, n, note))
    return cells


def describe_iteration(record) -> str:
    """One iteration in a few lines of plain text."""
    ids = lambda xs: ", ".join(map(str, xs)) if xs else tr("none")  # noqa: E731
    lines = [tr("iteration {i}: {tokens} tokens computed in {calls} forward call" if record.forward_calls == 1
                else "iteration {i}: {tokens} tokens computed in {calls} forward calls",
                i=record.index, tokens=record.num_tokens, calls=record.forward_calls)]
    if record.decode_ids:
        lines.append(tr("  decode ({n} tokens, one each): requests {ids}", n=len(record.decode_ids),
                        ids=ids(record.decode_ids)))
    for rid, start, n in record.prefill:
        chunk = "" if rid in record.sampled else tr(" — a chunk, no token sampled yet")
        lines.append(tr("  prefill: request {rid}, tokens {first}–{last} ({n} tokens)", rid=rid, first=start,
                        last=start + n - 1, n=n) + chunk)
    lines.append(tr("  sampled a token: {sampled} · finished: {finished}", sampled=ids(record.sampled),
                    finished=ids(record.finished))
                 + (tr(" · preempted: {ids}", ids=ids(record.preempted)) if record.preempted else ""))
    lines.append(tr("  after it: {running} running, {waiting} waiting, {blocks} KV blocks in use",
                    running=record.num_running, waiting=record.num_waiting, blocks=record.blocks_used))
    return "\n".join(lines)


@dataclass
class SlotUsage:
    """KV slots after one iteration: what the tokens need, what paging allocates, what contiguous caches
    (one reservation of prompt + max_tokens per running request) would hold."""
    iteration: int
    running: int  # requests holding blocks
    slots_used: int  # slots holding a computed token (a shared slot counted once)
    slots_allocated: int  # blocks in use × block_size
    slots_reserved: int  # Σ (prompt + max_tokens) over the running requests
    paged_waste: float  # 1 − used / allocated: the record's `fragmentation`
    contiguous_waste: float  # 1 − tokens / reserved: the record's `contiguous_fragmentation`


def slot_usage(run) -> list[SlotUsage]:
    """Each iteration's slot counts, as the engine recorded them from the block manager."""
    return [SlotUsage(r.index, r.num_running, r.slots_used, r.slots_allocated, r.slots_reserved, r.fragmentation,
                      r.contiguous_fragmentation) for r in run.timeline]


def paged_cache_points(engine, request_id: int) -> list[CachePoint]:
    """One request's KV cache in the paged pool, after each iteration it computed in, as `CachePoint`s
    (step 0 = its prefill) for `figures.cache_growth_figure(contiguous_points, paged=...)`.

    Allocated = its blocks × block size; used = its computed tokens. In the iteration where it finishes,
    its blocks are freed at the end; the point shows what it held during that iteration: the blocks
    its tokens needed, ceil(tokens / block size)."""
    c, bs = engine.lm.config, engine.config.block_size
    per_token = engine.cache.bytes_per_token
    dtype = engine.cache.k.dtype
    points, computed = [], 0
    for record in engine.timeline:
        work = _work(record)
        if request_id not in work:
            continue
        if record.block_tables is None:
            raise ValueError("paged_cache_points needs block tables: ServingConfig(record_block_tables=True)")
        kind, _, n = work[request_id]
        tables = record.block_tables["tables"]
        if request_id in tables:
            computed = record.block_tables["computed"][request_id]
            blocks = len(tables[request_id])
        else:  # finished (or preempted) in this iteration: its blocks were freed after the forward call
            computed += n
            blocks = ceil_div(computed, bs)
        used, allocated = computed * per_token, blocks * bs * per_token
        points.append(CachePoint(step=len(points), phase=kind, length=computed, capacity=blocks * bs,
                                 bytes_used=used, bytes_allocated=allocated,
                                 formula_bytes=cost.kv_cache_bytes(c, computed, 1, dtype),
                                 layer_bytes=[used // c.n_layers] * c.n_layers,
                                 layer_allocated=[allocated // c.n_layers] * c.n_layers))
        if request_id in record.finished:
            break
    return points


# ---- 1. the iteration timeline ------------------------------------------------------------------
def iteration_timeline_spec(run, upto: int | None = None, labels: dict | None = None,
                  title: str | None = None) -> tuple[list[dict], dict]:
    """Top: one row per request, one column per iteration (waiting grey, prefill blue, decode orange,
    a bar at the end when it finishes). Bottom: tokens computed per iteration, and the token budget."""
    first, last = run.timeline[0].index, run.timeline[-1].index
    upto = last if upto is None else max(first, min(upto, last))
    requests = [s.request_id for s in run.requests]
    row = {rid: i for i, rid in enumerate(requests)}
    names = [(labels or {}).get(rid, tr("request {rid}", rid=rid)) for rid in requests]
    cells = request_cells(run, upto)
    traces = []
    for kind in ("waiting", "prefill", "decode"):
        mine = [c for c in cells if c.kind == kind]
        traces.append(dict(type="bar", orientation="h", name=tr(kind), y=[row[c.request_id] for c in mine],
                           x=[1] * len(mine), base=[c.iteration - 0.5 for c in mine], width=0.7,
                           customdata=[c.note for c in mine], hovertemplate="%{customdata}<extra></extra>",
                           marker=dict(color=KIND_COLORS[kind], line=dict(color="white", width=1))))
    done = [s for s in run.requests if s.finish_iteration <= upto]
    traces.append(dict(type="scatter", name=tr("finished"), mode="markers", x=[s.finish_iteration + 0.5 for s in done],
                       y=[row[s.request_id] for s in done], marker=dict(symbol="line-ns", size=16,
                                                                        line=dict(width=3, color="#252525")),
                       customdata=[s.finish_iteration for s in done],  # x is the iteration's right edge
                       hovertemplate=tr("finished in iteration {i}", i="%{customdata}") + "<extra></extra>"))
    records = [r for r in run.timeline if r.index <= upto]
    preempted = [(r.index, rid) for r in records for rid in r.preempted if rid in row]
    traces.append(dict(type="scatter", name=tr("preempted"), mode="markers", x=[i for i, _ in preempted],
                       y=[row[rid] for _, rid in preempted], showlegend=bool(preempted),
                       marker=dict(symbol="x", size=11, color=COLORS["chosen"])))
    decode = [len(r.decode_ids) for r in records]
    prefill = [r.num_tokens - d for r, d in zip(records, decode, strict=True)]
    x = [r.index for r in records]
    traces += [
        dict(type="bar", name=tr("decode tokens"), x=x, y=decode, xaxis="x2", yaxis="y2", showlegend=False,
             marker=dict(color=KIND_COLORS["decode"]),
             hovertemplate=tr("iteration {i}: {n} decode tokens", i="%{x}", n="%{y}") + "<extra></extra>"),
        dict(type="bar", name=tr("prefill tokens"), x=x, y=prefill, base=decode, xaxis="x2", yaxis="y2",
             showlegend=False, marker=dict(color=KIND_COLORS["prefill"]),
             hovertemplate=tr("iteration {i}: {n} prefill tokens", i="%{x}", n="%{y}") + "<extra></extra>"),
    ]
    budget = run.config.get("max_num_batched_tokens")
    name = tr("token budget ({budget})", budget=budget) if budget else tr("no token budget")
    traces.append(dict(type="scatter", name=name, mode="lines", xaxis="x2",
                       yaxis="y2",
                       x=[first - 0.5, last + 0.5], y=[budget, budget] if budget else [None, None],
                       showlegend=bool(budget), line=dict(color="#636363", dash="dash")))
    n = len(requests)
    shapes = []
    if upto < last:
        shapes = [dict(type="rect", xref="x", yref="paper", x0=upto + 0.5, x1=last + 0.5, y0=0, y1=1,
                       fillcolor="white", opacity=0.6, line=dict(width=0))]
    iterations = (tr("iteration {upto} of {first}–{last}", upto=upto, first=first, last=last) if upto < last
                  else tr("{n} iterations", n=last - first + 1))
    calls = sum(r.forward_calls for r in run.timeline)
    title = title or tr("{policy} batching: {n} requests, at most {most} at once · {iterations}, {calls} forward calls "
                        "in all", policy=tr(run.config["policy"]), n=n, most=run.config["max_num_seqs"],
                        iterations=iterations, calls=calls)
    layout = dict(
        title=dict(text=title, font=dict(size=13)), barmode="overlay", height=max(340, 200 + 22 * n),
        shapes=shapes,
        xaxis=dict(anchor="y", range=[first - 0.5, last + 0.5], showticklabels=False),
        yaxis=dict(domain=[0.3, 1], tickvals=list(range(n)), ticktext=names, range=[n - 0.5, -0.5]),
        xaxis2=dict(anchor="y2", matches="x", title=dict(text=tr("iteration"))),
        yaxis2=dict(domain=[0, 0.22], title=dict(text=tr("tokens")), rangemode="tozero"),
        legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0), margin=dict(t=70, l=110, r=20, b=50))
    return traces, layout


def iteration_timeline_figure(run, upto: int | None = None, labels: dict | None = None,
                              title: str | None = None) -> go.Figure:
    """Requests joining and leaving: who waited, prefilled and decoded in each iteration of `run`."""
    return figure(iteration_timeline_spec(run, upto, labels, title))


# ---- 2. block tables and the pool ---------------------------------------------------------------
def block_contents(snapshot: dict) -> tuple[dict[int, int], dict[int, list[int]]]:
    """From a block-table snapshot: block id → slots holding a token, and block id → requests holding it."""
    bs = snapshot["block_size"]
    filled: dict[int, int] = {}
    owners: dict[int, list[int]] = {}
    for rid, table in snapshot["tables"].items():
        n = snapshot["computed"][rid]
        for i, block in enumerate(table):
            filled[block] = max(filled.get(block, 0), min(max(n - i * bs, 0), bs))
            owners.setdefault(block, []).append(rid)
    return filled, owners


def block_table_spec(snapshot: dict, title: str | None = None, columns: int = 16) -> tuple[list[dict], dict]:
    """Left: each running request's block table, logical block i → physical block id (colour: how full;
    green: shared). Right: the pool, every physical block (grey: free, blue: one owner, green: shared)."""
    bs, tables, refs = snapshot["block_size"], snapshot["tables"], snapshot["ref_counts"]
    refs = {int(k): v for k, v in refs.items()}
    num_blocks = snapshot["num_free"] + len(refs)
    filled, owners = block_contents(snapshot)
    rids = sorted(tables)
    width = max([len(t) for t in tables.values()], default=1)
    traces = []
    for name, shared, scale in (("one owner", False, [[0, "#deebf7"], [1, COLORS["prefill"]]]),
                                ("shared", True, [[0, "#e5f5e0"], [1, SHARED]])):
        z, text, hover = [], [], []
        for rid in rids:
            zr, tx, hr = [None] * width, [""] * width, [""] * width
            for i, block in enumerate(tables[rid]):
                if (refs.get(block, 0) > 1) == shared:
                    zr[i] = round(filled[block] / bs, 6)
                    tx[i] = str(block)
                    hr[i] = tr("request {rid}, logical block {i} → physical block {block}: {filled}/{bs} slots, tokens "
                               "{first}–{last}, ref count {refs}", rid=rid, i=i, block=block, filled=filled[block],
                               bs=bs, first=i * bs, last=i * bs + bs - 1, refs=refs.get(block, 0))
            z.append(zr)
            text.append(tx)
            hover.append(hr)
        traces.append(dict(type="heatmap", name=tr("table: {name}", name=tr(name)), x=list(range(width)),
                           y=list(range(len(rids))), z=z, text=text, customdata=hover, texttemplate="%{text}",
                           zmin=0, zmax=1, colorscale=scale, showscale=False, xgap=2, ygap=2,
                           hovertemplate="%{customdata}<extra></extra>"))
    rows = ceil_div(num_blocks, columns)
    for name, test, scale in (("free", lambda b: refs.get(b, 0) == 0, [[0, "#f0f0f0"], [1, "#f0f0f0"]]),
                              ("one owner", lambda b: refs.get(b, 0) == 1, [[0, "#deebf7"], [1, COLORS["prefill"]]]),
                              ("shared", lambda b: refs.get(b, 0) > 1, [[0, "#e5f5e0"], [1, SHARED]])):
        z = [[None] * columns for _ in range(rows)]
        text = [[""] * columns for _ in range(rows)]
        hover = [[""] * columns for _ in range(rows)]
        for b in range(num_blocks):
            if test(b):
                r, col = divmod(b, columns)
                z[r][col] = round(filled.get(b, 0) / bs, 6)
                text[r][col] = str(b)
                who = ", ".join(map(str, owners.get(b, []))) or tr("nobody")
                hover[r][col] = tr("block {b}: {filled}/{bs} slots, ref count {refs} (requests {who})", b=b,
                                   filled=filled.get(b, 0), bs=bs, refs=refs.get(b, 0), who=who)
        traces.append(dict(type="heatmap", name=tr("pool: {name}", name=tr(name)), x=list(range(columns)),
                           y=list(range(rows)), z=z, text=text, customdata=hover, texttemplate="%{text}", zmin=0,
                           zmax=1, colorscale=scale, showscale=False, xgap=2, ygap=2, xaxis="x2", yaxis="y2",
                           hovertemplate="%{customdata}<extra></extra>"))
    used = len(refs)
    shared = sum(v > 1 for v in refs.values())
    slots_used, slots_allocated = sum(filled.values()), used * bs
    title = title or tr("block tables")
    title += tr(" · {used} of {total} blocks in use ({shared} shared), {free} free · {slots} of {allocated} allocated "
                "slots hold a token", used=used, total=num_blocks, shared=shared, free=snapshot["num_free"],
                slots=slots_used, allocated=slots_allocated)
    legend = tr("blue: one owner, green: shared (reference count > 1), grey: free · the darker, the fuller")
    title += f"<br><span style='font-size:11px'>{legend}</span>"
    layout = dict(
        title=dict(text=title, font=dict(size=13)), height=max(260, 120 + 30 * max(len(rids), rows)),
        xaxis=dict(domain=[0, 0.42], title=dict(text=tr("logical block (tokens i·bs … i·bs + bs − 1)")), dtick=1,
                   range=[-0.5, max(width, 4) - 0.5]),
        yaxis=dict(tickvals=list(range(len(rids))), ticktext=[tr("request {rid}", rid=r) for r in rids],
                   range=[max(len(rids), 1) - 0.5, -0.5]),
        xaxis2=dict(domain=[0.5, 1], anchor="y2",
                    title=dict(text=tr("the pool: {n} blocks × {bs} slots", n=num_blocks, bs=bs)),
                    showticklabels=False, range=[-0.5, columns - 0.5]),
        yaxis2=dict(anchor="x2", showticklabels=False, range=[rows - 0.5, -0.5]),
        plot_bgcolor="white", margin=dict(t=70, l=90, r=20, b=60))
    return traces, layout


def block_table_figure(snapshot: dict, title: str | None = None, columns: int = 16) -> go.Figure:
    """Block tables and the pool after one iteration (a snapshot from `IterationRecord.block_tables`)."""
    return figure(block_table_spec(snapshot, title, columns))


# ---- 3. fragmentation ---------------------------------------------------------------------------
def fragmentation_spec(usage: list[SlotUsage], title: str | None = None) -> tuple[list[dict], dict]:
    x = [u.iteration for u in usage]
    traces = [
        dict(type="scatter", name=tr("contiguous: reserved (prompt + max_tokens each)"), x=x, mode="lines",
             y=[u.slots_reserved for u in usage], line=dict(color=COLORS["allocated"], width=3, shape="hv")),
        dict(type="scatter", name=tr("paged: allocated (blocks × block size)"), x=x, mode="lines",
             y=[u.slots_allocated for u in usage], line=dict(color=COLORS["decode"], width=3, shape="hv")),
        dict(type="scatter", name=tr("used: tokens in the cache"), x=x, mode="lines+markers",
             y=[u.slots_used for u in usage], line=dict(color=COLORS["after"], shape="hv"), marker=dict(size=4)),
    ]
    busy = [u for u in usage if u.running]
    paged = sum(u.paged_waste for u in busy) / len(busy) if busy else 0.0
    contiguous = sum(u.contiguous_waste for u in busy) / len(busy) if busy else 0.0
    title = title or tr("KV slots per iteration · wasted on average: paged {paged:.1%}, contiguous reservation "
                        "{contiguous:.1%}", paged=paged, contiguous=contiguous)
    layout = dict(title=dict(text=title, font=dict(size=13)), height=360,
                  xaxis=dict(title=dict(text=tr("iteration"))), yaxis=dict(title=dict(text=tr("KV slots")),
                                                                          rangemode="tozero"),
                  legend=dict(orientation="h", y=-0.25), margin=dict(t=50, b=90))
    return traces, layout


def fragmentation_figure(usage: list[SlotUsage], title: str | None = None) -> go.Figure:
    """Slots the tokens use, slots paging allocates, slots contiguous caches would reserve, per iteration."""
    return figure(fragmentation_spec(usage, title))


# ---- 4. CacheBlend: quality against compute ------------------------------------------------------
SELECT_NAMES = {"deviation": "HKVD: largest K/V deviation", "random": "random tokens"}


def blend_quality_spec(rows, title: str | None = None) -> tuple[list[dict], dict]:
    """rows: `BlendRow`s from `teachllm.serving.quality_table`. Left: KL(full ‖ blended) on the question
    against the share of prefill compute spent; right: the question's perplexity. Full reuse (0) and full
    recompute (1) do not depend on the selection rule and start and end both lines."""
    ends = [r for r in rows if r.ratio in (0.0, 1.0)]
    traces = []
    for select, color in (("deviation", COLORS["prefill"]), ("random", COLORS["decode"])):
        mine = sorted([r for r in rows if r.select == select and r.ratio not in (0.0, 1.0)] + ends,
                      key=lambda r: r.recompute_fraction)
        x = _round([r.recompute_fraction for r in mine])
        text = [f"r = {r.ratio:.2f}" for r in mine]
        for axis, key, label in (("", "kl", "KL"), ("2", "ppl", tr("perplexity"))):
            y = _round([getattr(r, key) for r in mine])
            traces.append(dict(type="scatter", name=tr(SELECT_NAMES[select]), x=x, y=y, mode="lines+markers", text=text,
                               xaxis=f"x{axis}", yaxis=f"y{axis}", showlegend=axis == "", legendgroup=select,
                               line=dict(color=color),
                               hovertemplate="%{text}: " + tr("compute share") + " %{x:.3f}, " + label
                               + " %{y:.4f}<extra></extra>"))
    full = rows[0].ppl_full
    traces.append(dict(type="scatter", name=tr("full prefill"), mode="lines", x=[0, 1], y=[round(full, 4)] * 2,
                       xaxis="x2", yaxis="y2", line=dict(color="#636363", dash="dash")))
    marked = [r.recompute_fraction for r in rows if r.ratio == 0.15][:1]  # CacheBlend's ~15 % of the tokens (ch. 13)
    shapes = [dict(type="line", xref=f"x{axis}", yref=f"y{axis} domain", x0=round(x, 4), x1=round(x, 4), y0=0, y1=1,
                   line=dict(color="#999", dash="dot"), label=dict(text="r = 0.15", textposition="end"))
              for x in marked for axis in ("", "2")]
    title = title or tr("CacheBlend: quality of the question's next-token predictions against the prefill compute "
                        "spent")
    axis = dict(title=dict(text=tr("share of a full prefill's compute (token-layers)")), range=[-0.02, 1.02])
    layout = dict(title=dict(text=title, font=dict(size=13)), height=380, shapes=shapes,
                  xaxis=dict(domain=[0, 0.45], **axis), yaxis=dict(title=dict(text=tr("KL(full ‖ blended)")),
                                                                   rangemode="tozero"),
                  xaxis2=dict(domain=[0.55, 1], anchor="y2", **axis),
                  yaxis2=dict(anchor="x2", title=dict(text=tr("perplexity of the question"))),
                  legend=dict(orientation="h", y=-0.3), margin=dict(t=50, b=100))
    return traces, layout


def blend_quality_figure(rows, title: str | None = None) -> go.Figure:
    """KL and perplexity against compute, for HKVD and random selection (the chapter's CacheBlend table)."""
    return figure(blend_quality_spec(rows, title))


def _round(values, digits: int = 4) -> list:
    return [round(v, digits) for v in values]


# ---- widgets ------------------------------------------------------------------------------------
class _IterationSlider(static.StaticForm, widgets.VBox):
    """A slider and buttons over the iterations of a run; subclasses say what to draw for one iteration."""

    def __init__(self, run, start: int | None = None):
        self.run = run
        self.records = {r.index: r for r in run.timeline}
        first, last = run.timeline[0].index, run.timeline[-1].index
        self.slider = widgets.IntSlider(value=first if start is None else start, min=first, max=last,
                                        description=tr("iteration"), layout=widgets.Layout(width="420px"))
        self.slider.add_class("teachllm-iteration")
        self.buttons = buttons = []
        for label, icon, action in ((tr("previous"), "step-backward", self.previous),
                                    (tr("next"), "step-forward", self.next), (tr("last"), "fast-forward", self.last)):
            b = widgets.Button(description=label, icon=icon, layout=widgets.Layout(width="110px"))
            b.on_click(lambda _, action=action: action())
            buttons.append(b)
        self.info = widgets.HTML()
        self.figure = go.FigureWidget(figure(self.spec(self.slider.value)))
        self._describe()
        self.slider.observe(lambda _: self.show(), names="value")
        super().__init__([widgets.HBox([self.slider, *buttons]), self.info, self.figure])

    @property
    def record(self):
        return self.records[self.slider.value]

    def spec(self, iteration: int) -> tuple[list[dict], dict]:
        raise NotImplementedError

    def _describe(self) -> None:
        self.info.value = self.info_html(self.record)

    @staticmethod
    def info_html(record) -> str:
        return f"<pre style='margin:0'>{html.escape(describe_iteration(record))}</pre>"

    def static_form(self) -> dict:
        """For the book: one frame per iteration, the same figure and words as `show` gives."""
        s = self.slider
        controls = [static.slider("iteration", s.description, s.min, s.max, 1, s.value),
                    static.buttons("iteration", [(b.description, what) for b, what
                                                 in zip(self.buttons, ("previous", "next", "last"), strict=True)])]
        frames = {static.key(i): {"figure": self.spec(i), "html": {"info": self.info_html(r)}}
                  for i, r in self.records.items()}
        return static.form(type(self).__name__, controls, frames)

    def show(self) -> None:
        refresh(self.figure, self.spec(self.slider.value))
        self._describe()

    def next(self) -> None:
        self.slider.value = min(self.slider.value + 1, self.slider.max)

    def previous(self) -> None:
        self.slider.value = max(self.slider.value - 1, self.slider.min)

    def last(self) -> None:
        self.slider.value = self.slider.max


class IterationTimeline(_IterationSlider):
    """The timeline of a finished run, revealed up to the chosen iteration, with that iteration in words."""

    def __init__(self, run, labels: dict | None = None, start: int | None = None):
        self.labels = labels
        super().__init__(run, start)

    def spec(self, iteration: int):
        return iteration_timeline_spec(self.run, upto=iteration, labels=self.labels)


class BlockTableView(_IterationSlider):
    """The block tables and the pool after the chosen iteration of a run (recorded with its block tables)."""

    def __init__(self, run, start: int | None = None, columns: int = 16):
        if any(r.block_tables is None for r in run.timeline):
            raise ValueError("BlockTableView needs block tables: run with ServingConfig(record_block_tables=True)")
        self.columns = columns
        super().__init__(run, start)

    def spec(self, iteration: int):
        return block_table_spec(self.records[iteration].block_tables, tr("after iteration {i}", i=iteration),
                                self.columns)
