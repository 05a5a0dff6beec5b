"""teachllm.viz: plotly figures and ipywidgets views of the engine's data.

    from teachllm.viz import DistributionExplorer, attention_figure, capture_attention
    DistributionExplorer(lm, "The three primary colours are")      # last thing in a notebook cell

`data` computes what to draw with teachllm's own code, `figures` turns it into plotly figures
(static, for the book and the tests), `widgets` puts controls around them for JupyterLab.
`Quiz(chapter)` is a chapter's self-check quiz (teachllm.course.quiz's data).
`set_language("zh")` draws and prints their words in Chinese (`tr`, with the catalogue in `zh`).
The engine never imports this package; this package only reads the engine's data.
"""

from . import data, figures, lecture, serving, widgets, zh
from .data import PRESETS, capture_attention, distribution, labeller, next_token_logits
from .figures import (
    attention_figure,
    cache_growth_figure,
    distribution_figure,
    roofline_figure,
    step_figure,
    timeline_figure,
)
from .language import language, pad, rpad, set_language, tr
from .lecture import (
    BPEStepper,
    beam_tree,
    beam_tree_figure,
    bpe_pieces_figure,
    penalty_stages,
    penalty_stages_figure,
    pipeline_figure,
    pipeline_stages,
)
from .offline import show_figures_offline
from .quiz import Quiz
from .serving import BlockTableView, IterationTimeline, block_table_figure, iteration_timeline_figure
from .widgets import AttentionExplorer, CacheGrowthView, DistributionExplorer, PhaseTimeline, RooflineView, StepThrough

__all__ = [
    "PRESETS", "AttentionExplorer", "BPEStepper", "BlockTableView", "CacheGrowthView", "DistributionExplorer",
    "IterationTimeline", "PhaseTimeline", "RooflineView", "StepThrough", "attention_figure", "block_table_figure",
    "cache_growth_figure", "capture_attention", "data", "distribution", "distribution_figure", "figures",
    "iteration_timeline_figure", "labeller", "next_token_logits", "roofline_figure", "serving", "step_figure",
    "timeline_figure", "widgets", "lecture", "beam_tree", "beam_tree_figure", "bpe_pieces_figure", "penalty_stages",
    "penalty_stages_figure", "pipeline_figure", "pipeline_stages", "language", "set_language", "show_figures_offline",
    "pad", "rpad", "tr", "zh", "Quiz",
]
