"""How long the distribution explorer takes to redraw after a slider move (target: under 50 ms on a CPU).

    python -m teachllm.bench.widgets            # bundled model, prompt below, 3 × 40 slider values

The model's logits are computed once when the explorer is built. A slider move then costs:
process_logits on one [V] row (V = 49,152 for the bundled model), a top-k for the bars, and an
in-place update of the FigureWidget. This times `slider.value = x`, which runs that whole path
through the widget's own callback, and reports the median; it also times the two halves apart.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from ..lm import load
from ..viz import data, figures, widgets

PROMPT = "The three primary colours are"


def _median_ms(fn, values) -> float:
    times = []
    for v in values:
        start = time.perf_counter()
        fn(v)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def run(lm, prompt: str = PROMPT, n_values: int = 40) -> dict:
    explorer = widgets.DistributionExplorer(lm, prompt)
    temperatures = [round(0.05 + 1.95 * i / (n_values - 1), 2) for i in range(n_values)]
    result = {"vocab_size": lm.config.vocab_size, "threads": torch.get_num_threads(), "slider_moves": 0}
    per_setting = {}
    for preset in ("custom", "chat", "brainstorm"):  # no filters; top-k 40 + top-p 0.9; top-k 100 + top-p 0.98
        explorer.preset.value = preset  # sets every slider ("custom" leaves them at their defaults)
        explorer.temperature.value = 1.0  # warm-up; the other sliders keep the preset's values

        def move(t):
            explorer.temperature.value = t

        per_setting[preset] = _median_ms(move, temperatures)
        result["slider_moves"] += len(temperatures)
    d = explorer.compute()
    result["redraw_ms_by_setting"] = per_setting
    result["redraw_ms"] = statistics.median(per_setting.values())
    result["data_ms"] = _median_ms(lambda _: explorer.compute(), range(n_values))
    result["figure_update_ms"] = _median_ms(lambda _: widgets.refresh(explorer.figure, figures.distribution_spec(d)),
                                            range(n_values))
    return result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m teachllm.bench.widgets", description=__doc__.split("\n")[0])
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument("--values", type=int, default=40, help="slider values per setting")
    args = parser.parse_args(argv)
    lm = load(device="cpu", dtype="float32")
    r = run(lm, args.prompt, args.values)
    print(f"distribution explorer redraw, {lm.name} (V = {r['vocab_size']:,}), CPU, {r['threads']} threads, "
          f"{r['slider_moves']} temperature-slider moves")
    for preset, ms in r["redraw_ms_by_setting"].items():
        filters = {k: v for k, v in data.PRESETS.get(preset, {}).items() if k != "temperature"} or "no filters"
        print(f"  temperature 0.05 … 2.0, {filters!s:<32} median {ms:6.1f} ms")
    print(f"  median redraw {r['redraw_ms']:.1f} ms (target < 50 ms): data {r['data_ms']:.1f} ms "
          f"+ figure update {r['figure_update_ms']:.1f} ms")
    return r


if __name__ == "__main__":
    main()
