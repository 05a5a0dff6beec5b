"""Figures a lecture shows instead of a table: BPE merges one at a time, logits through each penalty,
the tree a beam search grows.

Same pattern as `figures`: a data function computes what to draw with teachllm's own code (bpe,
sampling, beam), a `*_spec` returns (traces, layout) as plain dicts, a `*_figure` wraps it. The
tests compare every drawn number with the engine's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import ipywidgets as widgets
import plotly.graph_objects as go
import torch

from ..bpe import Merge, bpe_encode
from ..sampling import (
    SamplingParams,
    apply_no_repeat_ngram,
    apply_presence_frequency_penalty,
    apply_repetition_penalty,
    process_logits,
    sample,
)
from . import static
from .data import token_label
from .figures import COLORS, _r, figure
from .language import display_width, tr

PIECE_COLORS = ["#9ecae1", "#fdae6b", "#a1d99b", "#bcbddc", "#fc9272", "#c7e9c0", "#fdd0a2", "#dadaeb"]


# ---- BPE, one merge at a time (chapter 2) ------------------------------------------------------
def bpe_pieces_spec(text: str, merges: list[Merge], n_merges: int) -> tuple[list[dict], dict]:
    """`text` split by the first `n_merges` merges: one box per piece, as wide as its characters."""
    pieces = bpe_encode(text, merges[:n_merges])
    starts, start = [], 0
    for piece in pieces:
        starts.append(start)
        start += len(piece)
    trace = {"type": "bar", "orientation": "h", "y": [0] * len(pieces), "x": [len(p) for p in pieces],
             "base": starts, "text": [token_label(p) for p in pieces], "textposition": "inside",
             "insidetextanchor": "middle", "marker": {"color": [PIECE_COLORS[i % len(PIECE_COLORS)]
                                                               for i in range(len(pieces))],
                                                     "line": {"color": "white", "width": 2}},
             "hovertemplate": "%{text}<extra></extra>", "name": tr("pieces")}
    newest = merges[n_merges - 1].result if n_merges else None
    title = (tr("after {n} merge: {pieces} pieces", n=n_merges, pieces=len(pieces)) if n_merges == 1
             else tr("after {n} merges: {pieces} pieces", n=n_merges, pieces=len(pieces)))
    title += tr(" (latest merge: {merge})", merge=repr(token_label(newest))) if newest else tr(" (characters)")
    layout = {"title": title, "barmode": "overlay", "height": 160, "showlegend": False,
              "xaxis": {"title": tr("characters"), "range": [0, max(start, 1)]},
              "yaxis": {"visible": False}, "margin": {"t": 40, "b": 40, "l": 10, "r": 10}}
    return [trace], layout


def bpe_pieces_figure(text: str, merges: list[Merge], n_merges: int) -> go.Figure:
    return figure(bpe_pieces_spec(text, merges, n_merges))


class BPEStepper(static.StaticForm, widgets.VBox):
    """A slider over the merges: the text's pieces after the first n of them."""

    def __init__(self, text: str, merges: list[Merge], start: int = 0):
        self.text, self.merges = text, merges
        self.fig = go.FigureWidget(bpe_pieces_figure(text, merges, start))
        self.slider = widgets.IntSlider(value=start, min=0, max=len(merges), description=tr("merges"),
                                        continuous_update=True, layout=widgets.Layout(width="600px"))
        self.slider.observe(self._redraw, names="value")
        super().__init__([self.slider, self.fig])

    def _redraw(self, change=None):
        traces, layout = bpe_pieces_spec(self.text, self.merges, self.slider.value)
        with self.fig.batch_update():
            self.fig.data[0].update(traces[0])
            self.fig.layout.title = layout["title"]
            self.fig.layout.xaxis.range = layout["xaxis"]["range"]

    def static_form(self) -> dict:
        """For the book: one frame per number of merges, the figure `bpe_pieces_spec` draws."""
        s = self.slider
        frames = {static.key(n): {"figure": bpe_pieces_spec(self.text, self.merges, n)} for n in range(s.max + 1)}
        return static.form("BPEStepper", [static.slider("merges", s.description, s.min, s.max, 1, s.value)], frames)


# ---- logits through each penalty (chapter 7) ----------------------------------------------------
@dataclass
class PenaltyStages:
    token_ids: list[int]  # the tokens shown: the largest logits before or after any stage
    labels: list[str]
    stages: list[tuple[str, list[float]]]  # (name, logit of each shown token) in the order they apply


def penalty_stages(logits: torch.Tensor, params: SamplingParams, prompt_ids, output_ids, labels_of,
                   top_n: int = 8) -> PenaltyStages:
    """Logits [V] before the penalties and after each one, in `apply_penalties`' order: repetition
    (prompt + output), presence and frequency (output only), no-repeat n-gram (prompt + output)."""
    history = list(prompt_ids) + list(output_ids)
    steps = [(tr("logits"), logits.float())]
    steps.append((tr("repetition {value:g}", value=params.repetition_penalty),
                  apply_repetition_penalty(steps[-1][1], history, params.repetition_penalty)))
    steps.append((tr("presence {presence:g}, frequency {frequency:g}", presence=params.presence_penalty,
                     frequency=params.frequency_penalty),
                  apply_presence_frequency_penalty(steps[-1][1], list(output_ids), params.presence_penalty,
                                                   params.frequency_penalty)))
    steps.append((tr("no-repeat {n}-gram", n=params.no_repeat_ngram_size),
                  apply_no_repeat_ngram(steps[-1][1], history, params.no_repeat_ngram_size)))
    shown: list[int] = []
    for _, values in steps:
        for i in values.topk(top_n).indices.tolist():
            if i not in shown:
                shown.append(i)
    shown.sort(key=lambda i: -float(logits[i]))
    return PenaltyStages(shown, labels_of(shown), [(name, [float(v[i]) for i in shown]) for name, v in steps])


def penalty_stages_spec(p: PenaltyStages) -> tuple[list[dict], dict]:
    shades = ["#bdbdbd", "#6baed6", "#fd8d3c", "#d62728"]
    traces = [{"type": "bar", "name": name, "x": p.labels, "marker": {"color": shades[i % len(shades)]},
               "y": _r([v if v != float("-inf") else float("nan") for v in values], 4),
               "hovertemplate": "%{x}: %{y:.2f}<extra>" + name + "</extra>"}
              for i, (name, values) in enumerate(p.stages)]
    layout = {"title": tr("each penalty in turn (a missing bar: banned, −∞)"), "barmode": "group",
              "xaxis": {"title": tr("token")}, "yaxis": {"title": tr("logit")}, "height": 380,
              "legend": {"orientation": "h", "y": -0.3}}
    return traces, layout


def penalty_stages_figure(p: PenaltyStages) -> go.Figure:
    return figure(penalty_stages_spec(p))


# ---- the beam-search tree (chapter 8) -----------------------------------------------------------
@dataclass
class BeamNode:
    ids: tuple[int, ...]  # the generated tokens up to this node
    label: str  # the last token, readable
    score: float  # a running beam's sum of log-probabilities; a finished hypothesis's sum ÷ length^lp
    kept_to_end: bool  # on the path of the best finished hypothesis


def beam_tree(steps, labels_of) -> list[BeamNode]:
    """Every beam that ever ran, as nodes of a tree (a beam at step i is a node at depth i + 1), plus the
    finished hypotheses; `kept_to_end` marks the path of the best finished one. `steps`: `BeamStep`s."""
    steps = list(steps)
    scores: dict[tuple[int, ...], float] = {}
    for step in steps:
        for h in step.running + step.finished:
            scores.setdefault(tuple(h.token_ids), h.score)
    best = tuple(steps[-1].finished[0].token_ids) if steps and steps[-1].finished else ()
    on_path = {best[:i] for i in range(1, len(best) + 1)}
    nodes = sorted(scores, key=lambda ids: (len(ids), ids))
    return [BeamNode(ids, labels_of([ids[-1]])[0], scores[ids], ids in on_path) for ids in nodes]


def beam_tree_spec(nodes: list[BeamNode], title: str | None = None) -> tuple[list[dict], dict]:
    """Depth left to right; at each depth the nodes are spread top to bottom by score (best on top)."""
    by_depth: dict[int, list[BeamNode]] = {}
    for node in nodes:
        by_depth.setdefault(len(node.ids), []).append(node)
    position = {}
    for depth, group in by_depth.items():
        for rank, node in enumerate(sorted(group, key=lambda n: -n.score)):
            position[node.ids] = (depth, -rank)
    edge_x, edge_y, best_x, best_y = [], [], [], []
    for node in nodes:
        parent = node.ids[:-1]
        x0, y0 = position.get(parent, (0, 0))
        x1, y1 = position[node.ids]
        xs, ys = (best_x, best_y) if node.kept_to_end else (edge_x, edge_y)
        xs += [x0, x1, None]
        ys += [y0, y1, None]
    traces = [
        {"type": "scatter", "mode": "lines", "x": edge_x, "y": edge_y, "line": {"color": "#bdbdbd"},
         "hoverinfo": "skip", "name": tr("dropped later")},
        {"type": "scatter", "mode": "lines", "x": best_x, "y": best_y, "line": {"color": COLORS["chosen"], "width": 3},
         "hoverinfo": "skip", "name": tr("best finished sequence")},
        {"type": "scatter", "mode": "markers+text", "x": [0], "y": [0], "text": [tr("prompt")],
         "textposition": "middle left", "marker": {"color": "#636363", "size": 10}, "name": tr("prompt"),
         "hoverinfo": "skip"},
        {"type": "scatter", "mode": "markers+text", "name": tr("beams"),
         "x": [position[n.ids][0] for n in nodes], "y": [position[n.ids][1] for n in nodes],
         "text": [n.label for n in nodes], "textposition": "top center",
         "customdata": _r([n.score for n in nodes], 4),
         "marker": {"size": 9, "color": [COLORS["chosen"] if n.kept_to_end else COLORS["kept"] for n in nodes]},
         "hovertemplate": "%{text}<br>" + tr("beam score") + " %{customdata:.3f}<extra></extra>"},
    ]
    layout = {"title": title or tr("beam search: every beam kept at each step"),
              "xaxis": {"title": tr("generated tokens"), "dtick": 1}, "showlegend": True,
              "yaxis": {"title": tr("rank at that length (best on top)"), "showticklabels": False},
              "height": 420, "legend": {"orientation": "h", "y": -0.2}}
    return traces, layout


def beam_tree_figure(nodes: list[BeamNode], title: str | None = None) -> go.Figure:
    return figure(beam_tree_spec(nodes, title))


# ---- the generation pipeline with live shapes (chapter 1) --------------------------------------
@dataclass
class PipelineStage:
    name: str  # "tokenizer", "prefill", ...
    what: str  # what goes in and comes out, in words
    shape: str  # the live shape or value, as text


def pipeline_stages(lm, prompt: str, params: SamplingParams | None = None) -> list[PipelineStage]:
    """Run one prompt through tokenizer → prefill → one decode step → sampler → detokenizer, with the
    engine's own calls, and record the shape at each stage."""
    params = params or SamplingParams(temperature=0)
    tok = lm.tokenizer
    ids = tok.encode(prompt)
    cache = lm.new_cache(max_len=len(ids) + 2)
    logits = lm.prefill(ids, cache)  # [1, V]
    first = int(sample(process_logits(logits, params, [ids], [[]]), params)[0])
    cache_shape = (lm.config.n_layers, *cache.keys(0).shape)  # [L, B, n_kv, T, d] for K (and the same for V)
    step_logits = lm.decode_step(first, cache)  # [1, V]
    second = int(sample(process_logits(step_logits, params, [ids], [[first]]), params)[0])
    text = tok.decode([first, second])
    return [
        PipelineStage("tokenizer", tr("{n} characters → ids", n=len(prompt)), tr("ids [{n}]", n=len(ids))),
        PipelineStage("prefill", tr("every prompt token at once; fills the KV cache"),
                      f"[1, {len(ids)}] → logits {list(logits.shape)}"),
        PipelineStage("KV cache", tr("K and V of every layer"), tr("K, V: {shape} each", shape=list(cache_shape))),
        PipelineStage("decode loop", tr("one token per step, reads the cache"),
                      f"[1, 1] → logits {list(step_logits.shape)}"),
        PipelineStage("sampler", tr("logits → one id (greedy)") if params.greedy else tr("logits → one id (sampled)"),
                      tr("ids {first}, {second}", first=first, second=second)),
        PipelineStage("detokenizer", tr("ids → text"), repr(text)),
    ]


# Words a line of Chinese never breaks inside (the longest match wins: "KV 缓存" before "缓存"): the glossary's terms
# (book/zh/glossary.md) that figures use, and common words of the figures' own labels. Between two other Chinese
# characters a line may break, but only where the clause they are in is too long for a line.
CJK_WORDS = (
    # the glossary's terms
    "课程资料", "笔记本", "随机种子", "词元", "分词器", "反分词器", "反分词", "字节对编码", "提示词", "前向传播",
    "解码器层", "残差流", "激活", "旋转位置编码", "分组查询注意力", "多查询注意力", "预填充", "解码", "解码阶段",
    "解码策略", "解码循环", "自回归生成", "自回归", "KV 缓存", "槽位", "因果掩码", "追踪记录", "采样器", "采样",
    "贪婪解码", "温度", "top-k 采样", "核采样", "min-p 采样", "重复惩罚", "存在惩罚", "频率惩罚", "禁止重复 n-gram",
    "束搜索", "长度惩罚", "序列结束符", "停止字符串", "首 token 延迟", "每 token 输出延迟", "生成速度", "延迟",
    "吞吐量", "算术强度", "Roofline 模型", "屋脊点", "计算密集型", "内存密集型", "内核", "算子融合", "静态批处理",
    "连续批处理", "批处理", "迭代", "token 预算", "分块预填充", "分页 KV 缓存", "分页注意力", "块表", "块池",
    "逻辑块", "物理块", "引用计数", "抢占", "前缀缓存", "困惑度", "推测解码", "KV 缓存量化", "注意力头", "查询头",
    "KV 头", "概率", "对话模板",
    # common words of the figures' labels
    "一次", "一个", "每步", "每一层", "全部", "处理", "读取", "写入", "文本", "字符", "缓存", "生成", "计算",
    "输出", "输入", "请求", "已结束", "完整",
)
OPENING = "（“‘《「『【〔［｛〈([{"  # never at the end of a line
CLOSING = "）”’》」』】〕］｝〉，。、；：！？…)]},.;:!?%"  # never at the start of a line
_CJK = "\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef"  # CJK characters and punctuation, full-width forms
_UNIT = re.compile("|".join(map(re.escape, sorted(CJK_WORDS, key=len, reverse=True)))
                   + rf"|\s+|[{re.escape(OPENING + CLOSING)}]|[{_CJK}]|[^\s{_CJK}{re.escape(OPENING + CLOSING)}]+")


def _cjk(ch: str) -> bool:
    return bool(re.match(f"[{_CJK}]", ch))


def _break(before: str, after: str, space: bool) -> str | None:
    """May a line end between `before` and `after` (`space`: whitespace between them)? None: never. "good": at a
    space between Latin words, after punctuation, before a bracket. "low": only inside a clause too long for a
    line: between Chinese words, and at the space the space rule puts between Chinese and Latin text."""
    if after[0] in CLOSING or before[-1] in OPENING:
        return None  # "（" at the end of a line, "，" at the start of one
    if before.endswith("第") or (before[-1].isdigit() and _cjk(after[0])):
        return None  # "第 / 3 层", "178 / 个字符"
    if not space and not _cjk(before[-1]) and not _cjk(after[0]):
        return None  # Latin text breaks at spaces only: "it’s", "[30,"
    if before[-1] in CLOSING or after[0] in OPENING:
        return "good"
    if space and not _cjk(before[-1]) and not _cjk(after[0]):
        return "good"
    return "low"


def wrap(text: str, columns: int) -> str:
    """`text` broken into lines of at most `columns` (a Chinese character counts two), joined with <br> for
    a plotly annotation: a box in the pipeline figure is narrow, and plotly never wraps text itself.

    A line breaks at a space between Latin words or after punctuation where it can, and inside a Chinese clause
    only where the clause is too long for a line, between words. Never inside a word of `CJK_WORDS` or a Latin
    word (one longer than `columns` gets a line of its own), after an opening bracket （ “ 《 or before closing
    punctuation ） ， 。 、 ” 》."""
    atoms: list[list[str]] = []  # [text, the whitespace before it, the kind of break before it]
    space = ""
    for unit in _UNIT.findall(text):
        if unit.isspace():
            space = unit
            continue
        kind = _break(atoms[-1][0], unit, bool(space)) if atoms else "good"
        if kind is None:
            atoms[-1][0] += space + unit  # glued: no line ends here
        else:
            atoms.append([unit, space, kind])
        space = ""
    phrases: list[list[tuple[str, str]]] = []  # the atoms between two good breaks: (whitespace before, atom)
    for unit, space, kind in atoms:
        if kind == "good" or not phrases:
            phrases.append([])
        phrases[-1].append((space, unit))
    lines, line = [], ""
    for phrase in phrases:
        whole = "".join(space + unit for space, unit in phrase)
        if not line or display_width(line + whole) <= columns:
            if display_width((line + whole).lstrip()) <= columns or len(phrase) == 1 and not line:
                line = (line + whole).lstrip()
                continue
        elif display_width(whole.lstrip()) <= columns:  # it fits on a line of its own
            lines.append(line)
            line = whole.lstrip()
            continue
        for space, unit in phrase:  # too long for any line: break it between words, filling this line first
            if line and display_width(line + space + unit) > columns:
                lines.append(line)
                line = unit
            else:
                line = (line + space + unit).lstrip()
    lines.append(line)
    return "<br>".join(x for x in lines if x)


# A box of the pipeline figure holds lines of at most PIPELINE_COLUMNS columns (`wrap`; a Chinese character counts
# two). On a page 680 pixels wide the figure's boxes are 89 pixels wide: 16 columns of the 10-pixel text take about
# 80 (a Chinese character 10 pixels, a Latin letter 5 on average), of the 9-pixel monospace text 86 (5.4 each).
PIPELINE_COLUMNS = 16


def pipeline_spec(stages: list[PipelineStage], title: str | None = None) -> tuple[list[dict], dict]:
    """Boxes left to right, each with its name, what it does and the live shape; arrows between them."""
    shapes, annotations = [], []
    width, gap = 1.0, 0.25
    for i, stage in enumerate(stages):
        x0 = i * (width + gap)
        color = "#fdd0a2" if stage.name in ("decode loop", "sampler") else "#c6dbef"
        shapes.append({"type": "rect", "x0": x0, "x1": x0 + width, "y0": 0, "y1": 1, "fillcolor": color,
                       "line": {"color": "#636363"}, "layer": "below"})
        annotations.append({"x": x0 + width / 2, "y": 0.8, "text": f"<b>{tr(stage.name)}</b>", "showarrow": False})
        annotations.append({"x": x0 + width / 2, "y": 0.52, "text": wrap(stage.what, PIPELINE_COLUMNS),
                            "showarrow": False, "font": {"size": 10}})
        annotations.append({"x": x0 + width / 2, "y": 0.19, "text": wrap(stage.shape, PIPELINE_COLUMNS),
                            "showarrow": False, "font": {"size": 9, "family": "monospace"}})
        if i:
            annotations.append({"x": x0, "y": 0.5, "ax": x0 - gap, "ay": 0.5, "xref": "x", "yref": "y",
                                "axref": "x", "ayref": "y", "text": "", "showarrow": True, "arrowhead": 2})
    n = len(stages)
    layout = {"title": title or tr("one prompt through the pipeline"), "shapes": shapes, "annotations": annotations,
              "height": 300,
              "xaxis": {"visible": False, "range": [-0.05, n * (width + gap) - gap + 0.05]},
              "yaxis": {"visible": False, "range": [-0.1, 1.1]}, "margin": {"t": 40, "b": 10, "l": 5, "r": 5}}
    return [], layout


def pipeline_figure(stages: list[PipelineStage], title: str | None = None) -> go.Figure:
    return figure(pipeline_spec(stages, title))
