"""Plain functions: data in (from `teachllm.viz.data`), plotly figure out.

Each view has two functions. `*_spec(...)` returns the figure as plain dicts, (traces, layout), and
`*_figure(...)` wraps them in a `go.Figure` for the book and the tests. A widget builds its
`FigureWidget` once from the figure and, when a control moves, copies a new spec into it in place
(same traces, new values), which is much cheaper than drawing a new figure.

Numbers are rounded (probabilities to 6 decimals) so that a figure saved in a notebook does not
change with the last bits of floating point on another machine.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go

from . import labels
from .data import AttentionCapture, CachePoint, Distribution, Segment, StepRecord
from .language import font, tr

COLORS = {"kept": "#9ecae1", "removed": "#d9d9d9", "after": "#2166ac", "cumulative": "#e6550d", "chosen": "#d62728",
          "prefill": "#3182bd", "decode": "#fd8d3c", "formula": "#636363", "allocated": "#bdbdbd"}


def _r(values, digits: int = 6) -> list:
    """Round a list of floats (NaN → None, which plotly leaves blank)."""
    return [None if v is None or math.isnan(v) else round(v, digits) for v in values]


def _sig(value: float, digits: int = 4) -> float:
    """Round to `digits` significant digits."""
    return float(f"{value:.{digits - 1}e}")


def figure_layout(**settings) -> dict:
    """Every figure's layout: the plotly_white template, a font with Chinese glyphs when the language is
    "zh" (`language.font`), then `settings`."""
    return {"template": "plotly_white", **font(), **settings}


def figure(spec: tuple[list[dict], dict]) -> go.Figure:
    """A `go.Figure` from (traces, layout)."""
    traces, layout = spec
    return go.Figure(data=traces, layout=figure_layout(**layout))


# ---- 1. the next-token distribution -------------------------------------------------------------
def describe(params) -> str:
    """The settings that change the distribution, in a few words."""
    if params.greedy:
        parts = [tr("greedy (T = 0)")]
    else:
        parts = [f"T = {params.temperature:.2f}"]
        parts += [f"top-k {params.top_k}"] if params.top_k_enabled else []
        parts += [f"top-p {params.top_p:.2f}"] if params.top_p < 1 else []
        parts += [f"min-p {params.min_p:.2f}"] if params.min_p > 0 else []
    for name, value, off in (("repetition", params.repetition_penalty, 1.0), ("presence", params.presence_penalty, 0.0),
                             ("frequency", params.frequency_penalty, 0.0)):
        parts += [f"{tr(name)} {value:.2f}"] if value != off else []
    return ", ".join(parts)


def distribution_spec(d: Distribution) -> tuple[list[dict], dict]:
    n = len(d.token_ids)
    x = list(range(n))
    names = [f"{label} (id {i})" for label, i in zip(d.labels, d.token_ids, strict=True)]
    p = d.params
    top_p_on = d.n_top_p is not None
    chosen_x = [d.token_ids.index(d.chosen)] if d.chosen in d.token_ids else []
    traces = [
        dict(type="bar", name=tr("model (before)"), x=x, y=_r(d.before), customdata=names,
             marker=dict(color=[COLORS["kept"] if k else COLORS["removed"] for k in d.kept]),
             hovertemplate="%{customdata}<br>" + tr("model") + ": %{y:.4f}<extra></extra>"),
        dict(type="bar", name=tr("after processing"), x=x, y=_r(d.after), customdata=names,
             marker=dict(color=COLORS["after"]),
             hovertemplate="%{customdata}<br>" + tr("after") + ": %{y:.4f}<extra></extra>"),
        dict(type="scatter", name=tr("cumulative (what top-p sees)"), x=x, y=_r(d.cumulative), yaxis="y2",
             mode="lines+markers", line=dict(color=COLORS["cumulative"], width=1.5), marker=dict(size=4)),
        dict(type="scatter", name=f"top-p = {p.top_p:.2f}", x=[-0.5, n - 0.5], yaxis="y2", mode="lines",
             y=[p.top_p, p.top_p] if top_p_on else [None, None], line=dict(color=COLORS["cumulative"], dash="dash"),
             showlegend=top_p_on),
        dict(type="scatter", name=tr("sampled"), x=chosen_x, y=[_r(d.after)[i] for i in chosen_x], mode="markers+text",
             text=[tr("sampled")] * len(chosen_x), textposition="top center",
             marker=dict(symbol="star", size=16, color=COLORS["chosen"]), showlegend=bool(chosen_x)),
    ]
    shapes = []
    for rule, cut in (("top-k", p.top_k if p.top_k_enabled and not p.greedy else None), ("top-p", d.n_top_p)):
        if cut is not None and cut < n:
            shapes.append(dict(type="line", x0=cut - 0.5, x1=cut - 0.5, y0=0, y1=1, yref="paper",
                               line=dict(color="#444", dash="dot"),
                               label=dict(text=tr("{rule} cut", rule=rule), textangle=-90)))
    title = tr("{settings} · entropy {before:.2f} → {after:.2f} bits · {kept:,} of {vocab:,} tokens survive",
               settings=describe(p), before=d.entropy_before, after=d.entropy_after, kept=d.n_kept,
               vocab=d.vocab_size)
    if d.chosen is not None:
        where = "" if chosen_x else tr(", outside the chart")
        token = d.labels[chosen_x[0]] if chosen_x else repr(d.chosen)
        title += tr(" · sampled {token} (rank {rank}{where})", token=token, rank=d.chosen_rank, where=where)
    layout = dict(
        title=dict(text=title, font=dict(size=13)), barmode="group", bargap=0.15, shapes=shapes, height=440,
        xaxis=dict(tickvals=x, ticktext=d.labels, tickangle=-45, range=[-0.5, n - 0.5]),
        yaxis=dict(title=dict(text=tr("probability")), rangemode="tozero"),
        yaxis2=dict(title=dict(text=tr("cumulative")), overlaying="y", side="right", range=[0, 1.02], showgrid=False,
                    tickvals=[0, 0.25, 0.5, 0.75, 1]),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0), margin=dict(t=90, b=90, l=60, r=60))
    return traces, layout


def distribution_figure(d: Distribution) -> go.Figure:
    """Bars of the top tokens before (light: kept, grey: removed) and after processing (dark), the
    cumulative probability that top-p cuts, the cuts themselves, and a sampled token if there is one."""
    return figure(distribution_spec(d))


# ---- 2. attention ---------------------------------------------------------------------------------
def attention_spec(capture: AttentionCapture, layer: int, head: int) -> tuple[list[dict], dict]:
    group = capture.group_of(head)
    S, N = capture.n_prompt, len(capture.token_ids)
    ticks = dict(tickvals=list(range(N)), ticktext=capture.labels)
    traces, layout, shapes, titles = [], {}, [], []
    width, gap = 1 / len(group), 0.03
    for k, h in enumerate(group, start=1):
        probs = capture.probs[layer][h]  # [N, N], NaN where masked
        axis = "" if k == 1 else str(k)
        for phase, rows in (("prefill", range(S)), ("decode", range(S, N))):
            traces.append(dict(
                type="heatmap", name=tr("{phase}, head {h}", phase=tr(phase), h=h), x=list(range(N)), y=list(rows),
                xaxis=f"x{axis}", yaxis=f"y{axis}", z=[_r(probs[i].tolist()) for i in rows], zmin=0, zmax=1,
                colorscale="Blues" if phase == "prefill" else "Oranges", showscale=k == len(group),
                colorbar=dict(title=dict(text=tr(phase)), len=0.45, y=0.75 if phase == "prefill" else 0.25),
                hovertemplate=tr("{phase}, query head {h}", phase=tr(phase), h=h) + "<br>"
                + tr("query") + " %{y} → " + tr("key") + " %{x}: %{z:.4f}<extra></extra>"))
        domain = [(k - 1) * width + gap / 2, k * width - gap / 2]
        layout[f"xaxis{axis}"] = dict(domain=domain, tickangle=-60, range=[-0.5, N - 0.5], **ticks)
        layout[f"yaxis{axis}"] = dict(anchor=f"x{axis}", range=[N - 0.5, -0.5], showticklabels=k == 1, **ticks)
        if N > S:
            shapes.append(dict(type="line", xref=f"x{axis}", yref=f"y{axis}", x0=-0.5, x1=N - 0.5, y0=S - 0.5,
                               y1=S - 0.5, line=dict(color="#333", width=1.5)))
        mark = tr(" ◀ selected") if h == head else ""
        titles.append(dict(text=tr("query head {h}", h=h) + mark, x=sum(domain) / 2, y=1.0, xref="paper", yref="paper",
                           xanchor="center", yanchor="bottom", showarrow=False))
    title = tr("layer {layer} · KV head {kv} is shared by query heads {first}–{last} (GQA)<br>blue: prefill, one row "
               "per prompt token · orange: decode, one row per step · grey: masked (the future)",
               layer=layer, kv=head // capture.n_groups, first=group[0], last=group[-1])
    layout.update(title=dict(text=title, font=dict(size=12)), shapes=shapes, annotations=titles,
                  plot_bgcolor="#e0e0e0", height=280 + 18 * N, margin=dict(t=100, l=90, r=20, b=90))
    return traces, layout


def attention_figure(capture: AttentionCapture, layer: int, head: int) -> go.Figure:
    """Heatmaps of attention probabilities (query rows, key columns) for `head` and the query heads
    that share its KV head; the prefill block and the decode rows in two colours, masked cells grey."""
    return figure(attention_spec(capture, layer, head))


# ---- 3. KV cache growth ---------------------------------------------------------------------------
def cache_growth_spec(points: list[CachePoint], paged: list[CachePoint] | None = None) -> tuple[list[dict], dict]:
    steps = [p.step for p in points]
    last = points[-1]
    L = len(last.layer_bytes)
    traces = [
        dict(type="scatter", name=tr("measured: cache.bytes_used"), x=steps, y=[p.bytes_used for p in points],
             mode="lines+markers", line=dict(color=COLORS["after"])),
        dict(type="scatter", name=tr("formula: 2·L·n_kv·d·tokens·batch·bytes per element"), x=steps,
             y=[p.formula_bytes for p in points], mode="markers",
             marker=dict(color=COLORS["formula"], symbol="x-thin-open", size=11, line=dict(width=2))),
        dict(type="scatter", name=tr("contiguous: allocated"), x=steps, y=[p.bytes_allocated for p in points],
             mode="lines", line=dict(color=COLORS["allocated"], width=3)),
        dict(type="bar", name=tr("layer: K+V stored"), x=list(range(L)), y=last.layer_bytes, xaxis="x2", yaxis="y2",
             marker=dict(color=COLORS["after"])),
        dict(type="bar", name=tr("layer: reserved, empty"), x=list(range(L)), xaxis="x2", yaxis="y2",
             y=[a - u for a, u in zip(last.layer_allocated, last.layer_bytes, strict=True)],
             marker=dict(color=COLORS["allocated"])),
    ]
    if paged is not None:
        traces += [dict(type="scatter", name=tr("paged: allocated"), x=[p.step for p in paged], line_shape="hv",
                        y=[p.bytes_allocated for p in paged], mode="lines", line=dict(color=COLORS["decode"], width=3)),
                   dict(type="scatter", name=tr("paged: used"), x=[p.step for p in paged], mode="lines+markers",
                        y=[p.bytes_used for p in paged], line=dict(color=COLORS["decode"], dash="dot"))]
    title = tr("KV cache after step {step} ({phase}): {length} of {capacity} slots, {used:.2f} MiB used of "
               "{allocated:.2f} MiB allocated", step=last.step, phase=tr(last.phase), length=last.length,
               capacity=last.capacity, used=last.bytes_used / 2**20, allocated=last.bytes_allocated / 2**20)
    layout = dict(
        title=dict(text=title, font=dict(size=13)), barmode="stack", height=420,
        xaxis=dict(domain=[0, 0.55], title=dict(text=tr("step (0 = prefill)"))),
        yaxis=dict(title=dict(text=tr("bytes")), tickformat=".3s", rangemode="tozero"),
        xaxis2=dict(domain=[0.65, 1], title=dict(text=tr("layer")), anchor="y2"),
        yaxis2=dict(anchor="x2", title=dict(text=tr("bytes per layer")), tickformat=".3s"),
        legend=dict(orientation="h", y=-0.25), margin=dict(t=60, b=120))
    return traces, layout


def cache_growth_figure(points: list[CachePoint], paged: list[CachePoint] | None = None) -> go.Figure:
    """Left: the cache's bytes step by step, measured and by formula, against what is allocated (and a
    paged cache's, when given). Right: each layer's K and V after the last step, stored vs reserved."""
    return figure(cache_growth_spec(points, paged))


# ---- 4. step-through ------------------------------------------------------------------------------
def step_spec(r: StepRecord, show_time: bool = False) -> tuple[list[dict], dict]:
    n = len(r.candidates)
    labels = [f"{label} (id {i})" for i, label, _ in r.candidates]
    colors = [COLORS["chosen"] if i == r.token else COLORS["kept"] for i, *_ in r.candidates]
    probs = _r([p for *_, p in r.candidates])
    traces = [dict(type="bar", orientation="h", name=tr("candidates"), y=list(range(n)), x=probs,
                   marker=dict(color=colors), hovertemplate="%{x:.4f}<extra></extra>")]
    took = f" · {r.seconds * 1e3:.1f} ms" if show_time else ""  # off by default: the same on every machine
    title = tr("step {index} · {phase} · chose {token}{took} · KV cache {length} tokens", index=r.index,
               phase=tr(r.phase), token=repr(r.label), took=took, length=r.cache_length)
    layout = dict(title=dict(text=title, font=dict(size=13)), height=300, margin=dict(t=50, l=160),
                  xaxis=dict(title=dict(text=tr("probability after processing")), range=[0, 1]),
                  yaxis=dict(tickvals=list(range(n)), ticktext=labels, range=[n - 0.5, -0.5]))
    return traces, layout


def step_figure(r: StepRecord, show_time: bool = False) -> go.Figure:
    """The top candidates of one step, the chosen token in red (with the step's time if `show_time`)."""
    return figure(step_spec(r, show_time))


# ---- 5. cost --------------------------------------------------------------------------------------
def timeline_spec(segments: list[Segment]) -> tuple[list[dict], dict]:
    traces = []
    for phase in ("prefill", "decode"):
        seg = [s for s in segments if s.phase == phase]
        ms = [_sig(s.seconds * 1e3) for s in seg]
        starts = [_sig(s.start * 1e3) for s in seg]
        gflops = [f"{s.flops / 1e9:.3f} GFLOP" for s in seg]
        traces.append(dict(type="bar", orientation="h", name=tr(phase), y=[tr("model")] * len(seg), base=starts, x=ms,
                           customdata=gflops, marker=dict(color=COLORS[phase], line=dict(color="white", width=1)),
                           hovertemplate=tr(phase) + ": %{x} ms, %{customdata}<extra></extra>"))
    for phase in ("prefill", "decode"):
        seg = [s for s in segments if s.phase == phase and s.utilisation is not None]
        traces.append(dict(type="bar", name=tr("{phase} utilisation", phase=tr(phase)), xaxis="x2", yaxis="y2",
                           showlegend=False,
                           x=[_sig((s.start + s.seconds / 2) * 1e3) for s in seg],
                           width=[_sig(s.seconds * 1e3) for s in seg], y=[_sig(100 * s.utilisation) for s in seg],
                           marker=dict(color=COLORS[phase], line=dict(color="white", width=1)),
                           hovertemplate=tr("{value} of peak", value="%{y:.1f}%") + "<extra></extra>"))
    total = sum(s.seconds for s in segments) * 1e3
    n_decode = sum(s.phase == "decode" for s in segments)
    prompt = sum(s.tokens for s in segments if s.phase == "prefill")
    title = tr("prefill of {prompt} tokens, then {n} decode steps: {total:.0f} ms in all", prompt=prompt, n=n_decode,
               total=total)
    layout = dict(title=dict(text=title, font=dict(size=13)), height=380, barmode="overlay", bargap=0.3,
                  xaxis=dict(anchor="y", range=[0, total]), yaxis=dict(domain=[0.62, 1]),
                  xaxis2=dict(anchor="y2", matches="x", title=dict(text=tr("time since the prompt went in (ms)"))),
                  yaxis2=dict(domain=[0, 0.48], title=dict(text=tr("% of peak FLOP/s")), rangemode="tozero"),
                  legend=dict(orientation="h", y=1.12), margin=dict(t=80))
    return traces, layout


def timeline_figure(segments: list[Segment]) -> go.Figure:
    """The lecture's GPU-utilisation Gantt (chapter 10), measured: each step as a bar in time, and below it the share of
    the device's peak FLOP/s the step reached (when a peak was given)."""
    return figure(timeline_spec(segments))


def roofline_spec(device, points) -> tuple[list[dict], dict]:
    """device: a `teachllm.roofline.Device`; points: `PhasePoint`s from `measure_phases`."""
    intensities = [p.intensity for p in points] or [device.ridge]
    lo, hi = min(0.1, min(intensities) / 2), max(10 * device.ridge, max(intensities) * 2)
    traces = [dict(type="scatter", name=tr("roof: {device}", device=device.label(tr)), mode="lines",
                   line=dict(color="#333", width=2),
                   x=[_sig(lo), _sig(device.ridge), _sig(hi)],
                   y=[_sig(device.bandwidth * lo), _sig(device.peak_flops), _sig(device.peak_flops)])]
    for phase in ("prefill", "decode"):
        pts = [p for p in points if p.phase == phase]
        text = [f"s={p.length}" if phase == "prefill" else f"b={p.batch_size} T={p.length}" for p in pts]
        traces.append(dict(type="scatter", name=tr("{name} (measured)", name=tr(phase)), mode="markers+text", text=text,
                           textposition="top center", x=[_sig(p.intensity) for p in pts],
                           y=[_sig(p.achieved_flops) for p in pts], marker=dict(size=10, color=COLORS[phase]),
                           hovertemplate="%{text}: %{x:.1f} " + tr("FLOP/byte") + ", %{y:.3s}FLOP/s<extra></extra>"))
    source = {"measured": tr("measured"), "spec sheet": tr("spec sheet")}.get(device.source, device.source)
    peak = (f"{device.peak_flops / 1e12:.1f} TFLOP/s" if device.peak_flops >= 1e12  # a GPU's 989 TFLOP/s, not 989000
            else f"{device.peak_flops / 1e9:.1f} GFLOP/s")
    title = tr("{device} ({source}): peak {peak}, {bandwidth:.1f} GB/s, ridge {ridge:.1f} FLOP/byte",
               device=device.label(tr), source=source, peak=peak,
               bandwidth=device.bandwidth / 1e9, ridge=device.ridge)
    layout = dict(title=dict(text=title, font=dict(size=13)), height=440, margin=dict(t=100, b=80),
                  xaxis=dict(type="log", title=dict(text=tr("arithmetic intensity (FLOP/byte)")),
                             range=[math.log10(lo), math.log10(hi)]),
                  yaxis=dict(type="log", title=dict(text="FLOP/s"), exponentformat="SI"),
                  shapes=[dict(type="line", x0=device.ridge, x1=device.ridge, y0=0, y1=1, yref="paper",
                               line=dict(color="#999", dash="dot"))])
    return _label_roofline(traces, layout, device.ridge)


def _label_roofline(traces: list[dict], layout: dict, ridge: float) -> tuple[list[dict], dict]:
    """Finish a roofline spec: the y range (with room above the highest point for its label), the ridge's label
    and each point's textposition, placed by `labels.place` so that no two labels overlap at any plot width
    from `labels.PLOT_WIDTHS` (in either language: Chinese text is measured as such)."""
    ys = [math.log10(y) for t in traces for y in t["y"] if y and y > 0]
    height = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    room_above, room_below = 28, 22  # px: for a label above the highest marker, below the lowest
    per_px = (max(ys) - min(ys)) / (height - room_above - room_below) if len(set(ys)) > 1 else 1 / height
    bottom, top = min(ys) - room_below * per_px, max(ys) + room_above * per_px
    layout["yaxis"]["range"] = [bottom, top]
    roof, points = traces[0], traces[1:]
    scene = labels.Scene(
        markers=[(x, y) for t in points for x, y in zip(t["x"], t["y"], strict=True) if x and y and x > 0 and y > 0],
        lines=[list(zip(roof["x"], roof["y"], strict=True)), [(ridge, 10 ** bottom), (ridge, 10 ** top)]],
        vertical=(tr("ridge"), ridge))
    labelled = [t for t in points if "text" in t["mode"]]
    texts = [(x, y, text) for t in labelled for x, y, text in zip(t["x"], t["y"], t["text"], strict=True)]
    plots = [labels.plot_of(layout, width) for width in labels.PLOT_WIDTHS]
    chosen, (side, fraction) = labels.place(texts, scene, plots)
    for t in labelled:
        t["textposition"], chosen = chosen[:len(t["x"])], chosen[len(t["x"]):]
    layout["annotations"] = [dict(x=math.log10(ridge), y=fraction, xref="x", yref="paper", text=tr("ridge"),
                                  textangle=-90, showarrow=False, xanchor="right" if side == "left" else "left",
                                  yanchor="middle", xshift=-1 if side == "left" else 1, font=dict(color="#666"))]
    return traces, layout


def roofline_figure(device, points) -> go.Figure:
    """The roof min(peak, bandwidth × intensity) on log axes, with the measured prefill and decode points."""
    return figure(roofline_spec(device, points))


def precision_roofline_spec(device, rows: list[dict]) -> tuple[list[dict], dict]:
    """The memory-bound part of the roof, with one predicted and (where measured) one measured point per
    weight precision. rows: dicts with name, intensity (FLOP/byte of a decode step), predicted_flops
    (the roof at that intensity) and measured_flops (FLOPs of a step / its time; None if not measured)."""
    traces, layout = roofline_spec(device, [])
    palette = ["#3182bd", "#31a354", "#756bb1", "#e6550d", "#636363"]
    for row, color in zip(rows, palette, strict=False):
        traces.append(dict(type="scatter", name=tr("{name} (roofline)", name=row["name"]), mode="markers",
                           x=[_sig(row["intensity"])], y=[_sig(row["predicted_flops"])],
                           marker=dict(size=12, color=color, symbol="circle-open", line=dict(width=2)),
                           hovertemplate="%{x:.2f} " + tr("FLOP/byte") + ", %{y:.3s}FLOP/s " + tr("predicted")
                           + "<extra></extra>"))
        if row.get("measured_flops"):
            traces.append(dict(type="scatter", name=tr("{name} (measured)", name=row["name"]), mode="markers",
                               x=[_sig(row["intensity"])], y=[_sig(row["measured_flops"])],
                               marker=dict(size=10, color=color),
                               hovertemplate="%{x:.2f} " + tr("FLOP/byte") + ", %{y:.3s}FLOP/s " + tr("measured")
                               + "<extra></extra>"))
    xs = [r["intensity"] for r in rows]
    layout["xaxis"]["range"] = [math.log10(min(xs) / 2), math.log10(device.ridge * 4)]
    return _label_roofline(traces, layout, device.ridge)


def precision_roofline_figure(device, rows: list[dict]) -> go.Figure:
    """Decode at batch 1 for several weight precisions: where the roofline puts each, and where it lands."""
    return figure(precision_roofline_spec(device, rows))
