"""Interactive views for JupyterLab: ipywidgets controls driving plotly `FigureWidget`s.

    DistributionExplorer(lm, prompt)   sliders for temperature, top-k, top-p, min-p and the penalties
    AttentionExplorer(lm, prompt)      layer and head selectors over prefill + decode attention
    CacheGrowthView(lm, prompt)        the KV cache's bytes, step by step, against its allocation
    StepThrough(lm, prompt)            a "next token" button over the real generation loop
    PhaseTimeline(lm, prompt)          the prefill/decode timeline, measured
    RooflineView(lm)                   the roofline with measured prefill and decode points

Each view is a `widgets.VBox`: put it last in a cell, or `display(view)`. The model runs when a
view is built or a button asks for it; a slider only reprocesses numbers already computed and
copies them into the figure in place (`refresh`), so nothing is redrawn from scratch. Everything
is drawn by plotly.js and the widget manager bundled with JupyterLab: nothing is fetched from a CDN.
"""

from __future__ import annotations

import html
import json

import ipywidgets as widgets
import plotly.graph_objects as go

from .. import roofline
from ..generate import generation_steps
from ..sampling import SamplingParams
from . import data, figures, static
from .data import labeller
from .figures import COLORS, figure_layout
from .language import tr


def refresh(fig: go.FigureWidget, spec: tuple[list[dict], dict]) -> None:
    """Copy (traces, layout) from a `*_spec` function into `fig`, in place, in one message to the browser."""
    traces, layout = spec
    with fig.batch_update():
        if len(fig.data) != len(traces):
            fig.data = []
            fig.add_traces(traces)
        else:
            for trace, new in zip(fig.data, traces, strict=True):
                trace.update({k: v for k, v in new.items() if k != "type"})
        fig.layout.update(layout)


def _slider(kind, value, low, high, step, name):
    """A slider labelled `name` in the current language, with a CSS class to find it by in the page:
    `teachllm-<name>` (English in both editions)."""
    s = kind(value=value, min=low, max=high, step=step, description=tr(name), continuous_update=True,
             style={"description_width": "90px"}, layout=widgets.Layout(width="400px"))
    s.add_class(f"teachllm-{name}")
    return s


# ---- 1. the next-token distribution -------------------------------------------------------------
class DistributionExplorer(static.StaticForm, widgets.VBox):
    """The model's next-token logits for `prompt` (+ `output`, text it has already generated), computed
    once; every control reruns `process_logits` on that row and redraws the bars."""

    def __init__(self, lm, prompt: str, output: str = "", top_n: int = 20):
        tok = lm.tokenizer
        self.prompt_ids = tok.encode(prompt)
        self.output_ids = tok.encode(output, add_special_tokens=False) if output else []
        self.eos = lm.config.eos_token_ids
        self.logits = data.next_token_logits(lm, self.prompt_ids + self.output_ids)  # [V], the only model call
        self.labels_of = labeller(tok)
        self.top_n = top_n
        self.chosen: tuple[int, int] | None = None  # (token, rank) of the last sample
        self._holding = False

        S, I = widgets.FloatSlider, widgets.IntSlider
        self.controls = {  # SamplingParams field → its slider
            "temperature": _slider(S, 1.0, 0.0, 2.0, 0.05, "temperature"),
            "top_k": _slider(I, 0, 0, 200, 1, "top-k"),
            "top_p": _slider(S, 1.0, 0.01, 1.0, 0.01, "top-p"),
            "min_p": _slider(S, 0.0, 0.0, 0.5, 0.01, "min-p"),
            "repetition_penalty": _slider(S, 1.0, 0.5, 2.0, 0.05, "repetition"),
            "presence_penalty": _slider(S, 0.0, -2.0, 2.0, 0.1, "presence"),
            "frequency_penalty": _slider(S, 0.0, -2.0, 2.0, 0.1, "frequency"),
        }
        self.temperature, self.top_k, self.top_p, self.min_p = list(self.controls.values())[:4]
        self.preset = widgets.Dropdown(options=[(tr(name), name) for name in ("custom", *data.PRESETS)], value="custom",
                                       description=tr("preset"))
        self.seed = widgets.IntText(value=0, description=tr("random seed"), style={"description_width": "initial"},
                                    layout=widgets.Layout(width="180px"))
        self.sample_button = widgets.Button(description=tr("sample"), icon="random")
        self.info = widgets.HTML()

        self.figure = go.FigureWidget(figures.distribution_figure(self.compute()))
        for slider in self.controls.values():
            slider.observe(self._on_slider, names="value")
        self.preset.observe(self._on_preset, names="value")
        self.sample_button.on_click(self._on_sample)
        text = html.escape(tok.decode(self.prompt_ids)) + "<b>" + html.escape(output) + "</b>"
        note = "<i>" + tr("filters (T 0 = greedy; top-k 0, top-p 1, min-p 0 = off)") + "</i>"
        filters = widgets.VBox([widgets.HTML(note), *list(self.controls.values())[:4]])
        note = "<i>" + tr("penalties (1 and 0 = off; presence, frequency: output only)") + "</i>"
        penalties = widgets.VBox([widgets.HTML(note), *list(self.controls.values())[4:]])
        self.heading = widgets.HTML(f"<b>{tr('prompt:')}</b> {text}<b>▮</b>")
        super().__init__([self.heading, self.preset, widgets.HBox([filters, penalties]),
                          widgets.HBox([self.seed, self.sample_button, self.info]), self.figure])
        self._update_info()

    def params(self) -> SamplingParams:
        """The sliders' settings."""
        return SamplingParams(**{name: slider.value for name, slider in self.controls.items()})

    def compute(self) -> data.Distribution:
        """The distribution for the current settings (and the last sample, if any)."""
        with data.one_thread():
            d = data.distribution(self.logits, self.params(), self.prompt_ids, self.output_ids, self.eos,
                                  top_n=self.top_n, labels_of=self.labels_of)
        if self.chosen is not None:
            d.chosen, d.chosen_rank = self.chosen
        return d

    def redraw(self) -> None:
        """Recompute and update the figure in place: what every slider move costs."""
        refresh(self.figure, figures.distribution_spec(self.compute()))

    def _update_info(self):
        if self.chosen is None:
            self.info.value = tr("press <i>sample</i> to draw a token with this random seed")
        else:
            token, rank = self.chosen
            label = html.escape(self.labels_of([token])[0])
            self.info.value = tr("sampled <b>{token}</b> (id {id}, rank {rank} after processing)", token=label,
                                 id=token, rank=rank)

    def _on_slider(self, change):
        if self._holding:
            return
        self.chosen = None
        self._holding = True
        self.preset.value = "custom"
        self._holding = False
        self.redraw()
        self._update_info()

    def _on_preset(self, change):
        if self._holding or change["new"] == "custom":
            return
        settings = {**vars(SamplingParams()), **data.PRESETS[change["new"]]}
        self._holding = True
        for name, slider in self.controls.items():
            slider.value = settings[name]
        self._holding = False
        self.chosen = None
        self.redraw()
        self._update_info()

    def _on_sample(self, _button):
        params = self.params()
        self.chosen = data.sample_token(self.logits, params, self.seed.value, self.prompt_ids, self.output_ids,
                                        self.eos)
        self.redraw()
        self._update_info()

    def static_form(self) -> dict:
        """For the book (teachllm.viz.static): the real logits, exactly, and the controls; the page runs the same
        pipeline as `data.distribution` on them (book/_static/teachllm-widgets.js) and draws what `distribution_spec`
        draws. It names the tokens a chart can show: the 200 most likely, the history and EOS."""
        history = self.prompt_ids + self.output_ids
        shown = sorted(set(self.logits.topk(200).indices.tolist()) | set(history) | set(self.eos))
        controls = [static.slider(name, s.description, s.min, s.max, s.step, s.value)
                    for name, s in self.controls.items()]
        controls += [static.select("preset", self.preset.description, list(self.preset.options), self.preset.value),
                     {"kind": "number", "name": "seed", "label": self.seed.description, "value": self.seed.value}]
        strings = static.templates(
            "model (before)", "after processing", "cumulative (what top-p sees)", "sampled", "model", "after",
            "{rule} cut", "{settings} · entropy {before:.2f} → {after:.2f} bits · {kept:,} of {vocab:,} tokens survive",
            " · sampled {token} (rank {rank}{where})", ", outside the chart", "probability", "cumulative",
            "greedy (T = 0)", "repetition", "presence", "frequency", "sample",
            "press <i>sample</i> to draw a token with this random seed",
            "sampled <b>{token}</b> (id {id}, rank {rank} after processing)")
        notes = [child.children[0].value for child in self.children[2].children]
        return static.form("DistributionExplorer", controls, {}, logits=static.float32_base64(self.logits),
                           prompt_ids=self.prompt_ids, output_ids=self.output_ids, eos_token_ids=list(self.eos),
                           labels=dict(zip(shown, self.labels_of(shown), strict=True)), top_n=self.top_n,
                           presets=data.PRESETS, defaults=vars(SamplingParams()), strings=strings, notes=notes,
                           heading=self.heading.value, colors=COLORS, layout=static.figure_json(([], {}))["layout"])


# ---- 2. attention ---------------------------------------------------------------------------------
class AttentionExplorer(static.StaticForm, widgets.VBox):
    """Prefill `prompt` and decode `n_decode` greedy tokens with a Trace; choose a layer and a query head
    to see it beside the heads that share its KV head."""

    def __init__(self, lm, prompt: str, n_decode: int = 4, layer: int = 0, head: int = 0,
                 capture: data.AttentionCapture | None = None):
        """`capture` (from `capture_attention`) reuses a run made earlier, e.g. for a static figure."""
        self.capture = capture or data.capture_attention(lm, lm.tokenizer.encode(prompt), n_decode,
                                                         labeller(lm.tokenizer))
        c, g = lm.config, lm.config.n_groups
        self.layer = widgets.Dropdown(options=[(tr("layer {i}", i=i), i) for i in range(c.n_layers)], value=layer,
                                      description=tr("layer"))
        self.layer.add_class("teachllm-layer")
        self.head = widgets.Dropdown(options=[(tr("KV head {kv} · query head {h}", kv=h // g, h=h), h)
                                              for h in range(c.n_heads)],
                                     value=head, description=tr("head"), style={"description_width": "50px"})
        self.head.add_class("teachllm-head")
        self.figure = go.FigureWidget(figures.attention_figure(self.capture, layer, head))
        self.layer.observe(lambda _: self.redraw(), names="value")
        self.head.observe(lambda _: self.redraw(), names="value")
        super().__init__([widgets.HBox([self.layer, self.head]), self.figure])

    def redraw(self) -> None:
        refresh(self.figure, figures.attention_spec(self.capture, self.layer.value, self.head.value))

    def static_form(self) -> dict:
        """For the book: one frame per layer and head, the same figure as `redraw` draws."""
        controls = [static.select(name, w.description, list(w.options), w.value)
                    for name, w in (("layer", self.layer), ("head", self.head))]
        frames = {static.key(layer, head): {"figure": figures.attention_spec(self.capture, layer, head)}
                  for _, layer in self.layer.options for _, head in self.head.options}
        return static.form("AttentionExplorer", controls, frames)


# ---- 3 and 4. stepping through the generation loop ------------------------------------------------
class _Loop:
    """`generation_steps` for one prompt, advanced one `Step` at a time: what the stepping views share."""

    def __init__(self, lm, prompt: str, params: SamplingParams | None):
        self.lm, self.prompt, self.prompt_ids = lm, prompt, lm.tokenizer.encode(prompt)
        self.params = params or SamplingParams(temperature=0, max_tokens=24)
        self.labels_of = labeller(lm.tokenizer)
        self.restart()

    def restart(self) -> None:
        self._steps = generation_steps(self.lm, [self.prompt_ids], self.params)
        self.records: list[data.StepRecord] = []
        self.step = None  # the last Step

    @property
    def finished(self) -> bool:
        return bool(self.records) and self.records[-1].finished

    def advance(self) -> bool:
        """Take one step of the loop (the first one is prefill); False once a stop rule has fired."""
        if self.finished:
            return False
        self.step = next(self._steps)
        self.records.append(data.step_record(self.step, self.labels_of))
        return True

    def fresh(self) -> _Loop:
        """A new loop over the same prompt and settings, not yet started: for the book's recording of it."""
        return _Loop(self.lm, self.prompt, self.params)


def _stepping_controls(row: widgets.HBox, n_frames: int) -> list[dict]:
    """The book's controls for a view stepped by `_controls`' buttons: the step, and the same three buttons."""
    return [{"kind": "state", "name": "step", "min": 0, "max": n_frames - 1, "value": 0},
            static.buttons("step", list(zip(static.widget_buttons(row), ("next", "run", "first"), strict=True)))]


def _controls(view) -> widgets.HBox:
    """"next token", "run to the end" and "restart" buttons for a view with next(), run(), restart()."""
    buttons = [(tr("next token"), "step-forward", view.next), (tr("run to the end"), "fast-forward", view.run),
               (tr("restart"), "undo", view.restart)]
    row = []
    for label, icon, action in buttons:
        b = widgets.Button(description=label, icon=icon)
        b.on_click(lambda _, action=action: action())
        row.append(b)
    return widgets.HBox(row)


class CacheGrowthView(static.StaticForm, widgets.VBox):
    """The KV cache while generating: bytes after each step (the cache's own count and the formula)
    against what the contiguous cache allocated up front, and each layer's share."""

    def __init__(self, lm, prompt: str, params: SamplingParams | None = None):
        self.loop = _Loop(lm, prompt, params)
        self.points: list[data.CachePoint] = []
        self._take_step()  # prefill, so that there is something to draw
        self.figure = go.FigureWidget(figures.cache_growth_figure(self.points))
        self.buttons = _controls(self)
        super().__init__([self.buttons, self.figure])

    def _take_step(self) -> bool:
        if not self.loop.advance():
            return False
        step = self.loop.step
        self.points.append(data.cache_point(step.index, step.phase, step.cache))
        return True

    def next(self) -> None:
        if self._take_step():
            refresh(self.figure, figures.cache_growth_spec(self.points))

    def run(self) -> None:
        while not self.loop.finished:
            self.next()  # the figure grows step by step

    def restart(self) -> None:
        self.loop.restart()
        self.points = []
        self.next()

    def static_form(self) -> dict:
        """For the book: the whole run, recorded step by step; the buttons move along the recording."""
        loop, points, frames = self.loop.fresh(), [], {}
        while loop.advance():
            points.append(data.cache_point(loop.step.index, loop.step.phase, loop.step.cache))
            frames[static.key(len(frames))] = {"figure": figures.cache_growth_spec(list(points))}
        return static.form("CacheGrowthView", _stepping_controls(self.buttons, len(frames)), frames)


class StepThrough(static.StaticForm, widgets.VBox):
    """The real generation loop, one token per click: prefill or decode, the chosen token, the top
    candidates, the time the step took and the cache's length; the text grows as it goes."""

    def __init__(self, lm, prompt: str, params: SamplingParams | None = None):
        self.loop = _Loop(lm, prompt, params)
        self.loop.advance()  # prefill
        self.text, self.table = widgets.HTML(), widgets.HTML()
        self.figure = go.FigureWidget(figures.step_figure(self.loop.records[-1], show_time=True))
        self.buttons = _controls(self)
        super().__init__([self.buttons, self.text, widgets.HBox([self.table, self.figure])])
        self.show()

    def next(self) -> None:
        if self.loop.advance():
            self.show()

    def run(self) -> None:
        while self.loop.advance():
            self.show()

    def restart(self) -> None:
        self.loop.restart()
        self.next()

    def show(self) -> None:
        self.text.value, self.table.value = self.html(self.loop)
        refresh(self.figure, figures.step_spec(self.loop.records[-1], show_time=True))

    @staticmethod
    def html(loop: _Loop) -> tuple[str, str]:
        """The text so far and the table of the last 12 steps, as HTML."""
        records = loop.records
        r = records[-1]
        prompt = html.escape(loop.lm.tokenizer.decode(loop.prompt_ids))
        end = " <i>" + tr("(finished)") + "</i>" if r.finished else "▮"
        text = f"<span style='color:#888'>{prompt}</span><b>{html.escape(r.text)}</b>{end}"
        rows = "".join(f"<tr><td>{x.index}</td><td>{tr(x.phase)}</td><td>{html.escape(x.label)}</td>"
                       f"<td>{x.seconds * 1e3:.1f}</td><td>{x.cache_length}</td></tr>" for x in records[-12:])
        head = "".join(f"<th>{tr(name)}</th>" for name in ("step", "phase", "token", "ms", "cache"))
        return text, f"<table><tr>{head}</tr>{rows}</table>"

    def static_form(self) -> dict:
        """For the book: the whole run, recorded step by step (its times are the build machine's)."""
        loop, frames = self.loop.fresh(), {}
        while loop.advance():
            text, table = self.html(loop)
            frames[static.key(len(frames))] = {"figure": figures.step_spec(loop.records[-1], show_time=True),
                                               "html": {"text": text, "table": table}}
        return static.form("StepThrough", _stepping_controls(self.buttons, len(frames)), frames)


# ---- 5. cost ---------------------------------------------------------------------------------------
class PhaseTimeline(static.StaticForm, widgets.VBox):
    """Generate once and lay the measured steps out in time: one long prefill, many short decodes, and
    the share of the device's peak FLOP/s each reached (`device` from `tl.roofline.measure_device`)."""

    def __init__(self, lm, prompt: str, params: SamplingParams | None = None, device=None):
        self.lm, self.prompt_ids, self.device = lm, lm.tokenizer.encode(prompt), device
        self.params = params or SamplingParams(temperature=0, max_tokens=32, ignore_eos=True)
        self.labels_of = labeller(lm.tokenizer)
        self.figure = go.FigureWidget(layout=figure_layout())
        self.button = widgets.Button(description=tr("generate and time"), icon="clock-o",
                                     layout=widgets.Layout(width="auto"))
        self.button.on_click(lambda _: self.measure())
        super().__init__([self.button, self.figure])

    def measure(self) -> list[data.Segment]:
        if self.device is None:
            self.device = roofline.measure_device(self.lm.device, self.lm.dtype, config=self.lm.config)
        self.lm.generate(self.prompt_ids, SamplingParams(temperature=0, max_tokens=2))  # warm-up: one-off set-up costs
        records = [data.step_record(s, self.labels_of) for s in generation_steps(self.lm, [self.prompt_ids],
                                                                                 self.params)]
        segments = data.timeline(records, self.lm.config, self.device.peak_flops)
        refresh(self.figure, figures.timeline_spec(segments))
        return segments

    def static_form(self) -> dict:
        return _recording(self)


class RooflineView(static.StaticForm, widgets.VBox):
    """Measure the device's roof and time the real model's prefill and decode (`measure_phases`)."""

    def __init__(self, lm, prefill_lengths=(16, 64, 256), decode_batches=(1, 8), decode_contexts=(64, 512)):
        self.lm = lm
        self.settings = dict(prefill_lengths=prefill_lengths, decode_batches=decode_batches,
                             decode_contexts=decode_contexts)
        self.figure = go.FigureWidget(layout=figure_layout())
        self.button = widgets.Button(description=tr("measure"), icon="tachometer", layout=widgets.Layout(width="auto"))
        self.button.on_click(lambda _: self.measure())
        super().__init__([self.button, self.figure])

    def measure(self):
        device = roofline.measure_device(self.lm.device, self.lm.dtype, config=self.lm.config)
        points = roofline.measure_phases(self.lm, device=device, **self.settings)
        refresh(self.figure, figures.roofline_spec(device, points))
        return device, points

    def static_form(self) -> dict:
        return _recording(self)


def _recording(view) -> dict:
    """For the book, a view that measures this machine: its figure as the notebook left it, measured when the
    notebooks were built, and its button, which in the page says so instead of measuring again."""
    controls = [{"kind": "state", "name": "step", "min": 0, "max": 0, "value": 0},
                static.buttons("step", [(view.button.description, "replay")])]
    figure = json.loads(view.figure.to_json())
    return static.form(type(view).__name__, controls, {"0": {"figure": figure}},
                       replay=tr("The book shows what was measured when its notebooks were built; run this chapter's "
                                 "notebook to measure your own machine."))
