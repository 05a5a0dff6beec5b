"""The book's widgets with no kernel (book/_static/teachllm-widgets.js), in headless Chromium, both editions.

- Distribution explorer (chapters 6 and 7): for 22 settings of temperature, top-k, top-p, min-p and the
  repetition, presence and frequency penalties, the test moves the page's <input>s, reads what the page draws
  (data-params, data-probs, and the kept tokens from `root.teachllm.kept()`) and runs teachllm.sampling on the
  same logits (the page's own float32 copy, decoded here): every shown token's probability within 1e-6 of the
  softmax of `process_logits`' output, the same set of kept tokens. The softmax is taken in float64 on both
  sides: torch's float32 softmax kernel is itself off by up to ~1e-5 on these logits, by an amount that differs
  between its AVX2 and AVX-512 builds, so no page could match it; the test prints that error beside the page's.
  A preset and the "sample" button work too. Chapter 7's explorer continues a text that already repeats
  itself, so presence and frequency have output tokens to act on.
- Attention explorer (chapter 3): after choosing a layer and a head, the drawn heatmap is the engine's attention
  for the chapter's prompt (a fresh capture, within 1e-4: the page's numbers are rounded to 6 decimals and were
  computed on the build machine's CPU).
- Block tables (chapter 12): after moving the iteration slider, the words and the drawn table are those of the
  chapter's own run, replayed here on the engine.
- Every chapter page: each widget is drawn (no "needs a running Python kernel" note anywhere), nothing is
  requested outside 127.0.0.1, and three times are printed and saved (artifacts/live-book-load-times.json): from
  navigation to the page's scripts starting (DOMContentLoaded), to every widget drawn, and what the widgets'
  own script took (its `teachllm-widgets` performance measure). No time is asserted: this machine is shared.

Screenshots of the explorer after a slider moved, in both languages: artifacts/screenshots/live-*.png.
"""

import json
import re
from pathlib import Path

import pytest
from browser_support import SCREENSHOTS, local_page, missing, serve

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "book" / "_build" / "html"
TIMEOUT_MS = 60_000
EDITIONS = {"en": "", "zh": "zh/"}
TOLERANCE = 1e-6

# (temperature, top_k, top_p, min_p, repetition, presence, frequency): values on the sliders' steps
SETTINGS = [
    {}, {"temperature": 0}, {"temperature": 0.7}, {"temperature": 1.5}, {"top_k": 5}, {"temperature": 0.8, "top_k": 40},
    {"top_p": 0.9}, {"temperature": 1.3, "top_p": 0.5}, {"min_p": 0.05}, {"temperature": 1.5, "min_p": 0.2},
    {"repetition_penalty": 1.3}, {"repetition_penalty": 0.7}, {"presence_penalty": 1.0}, {"frequency_penalty": 0.8},
    {"presence_penalty": -1.0, "frequency_penalty": 0.5},
    {"temperature": 0.8, "top_k": 40, "top_p": 0.9, "repetition_penalty": 1.1},
    {"temperature": 2.0, "top_k": 100, "top_p": 0.98, "min_p": 0.01},
    {"temperature": 0.2, "repetition_penalty": 1.5, "frequency_penalty": 1.5},
    {"temperature": 0, "repetition_penalty": 2.0},
    {"temperature": 1.1, "top_k": 50, "top_p": 0.95, "presence_penalty": 0.5, "frequency_penalty": 0.5},
    {"temperature": 0.05, "top_k": 3}, {"top_p": 0.01},
]
FIELDS = ("temperature", "top_k", "top_p", "min_p", "repetition_penalty", "presence_penalty", "frequency_penalty")

SET_AND_READ = """([selector, settings]) => {
    const root = document.querySelector(selector);
    for (const [name, value] of Object.entries(settings)) {
        const input = root.querySelector(`input[name="${name}"]`);
        input.value = String(value);
        input.dispatchEvent(new Event('input', {bubbles: true}));
    }
    return {params: JSON.parse(root.dataset.params), probs: JSON.parse(root.dataset.probs),
            promptIds: JSON.parse(root.dataset.promptIds), kept: root.teachllm.kept()};
}"""


@pytest.fixture(scope="module")
def site():
    for page in ("chapters/06-logits-to-token.html", "zh/chapters/06-logits-to-token.html"):
        if not (SITE / page).is_file():
            missing(f"the book is not built ({SITE / page} is missing: run `make book`)")
    with serve(SITE) as url:
        yield url


TIMES = """() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const own = performance.getEntriesByName('teachllm-widgets')[0];
    return {scripts_start_ms: nav.domContentLoadedEventStart, widgets_drawn_ms: own.startTime + own.duration,
            widgets_own_ms: own.duration};
}"""


def open_page(browser, site, path, outside):
    """The page, once every widget on it is drawn (a page without widgets loads no widget script)."""
    page = local_page(browser, site + "/", outside, {"width": 1400, "height": 1000}, TIMEOUT_MS)
    page.goto(f"{site}/{path}")
    if page.locator("div.teachllm-live").count():
        page.wait_for_function("() => document.documentElement.dataset.teachllmWidgets === 'ready'")
    return page


def form_of(page, selector):
    """The static form the page reads (its JSON beside the widget's root)."""
    return json.loads(page.evaluate("s => document.getElementById(document.querySelector(s).id + '-json').textContent",
                                    selector))


# ---- the distribution explorer: the page's numbers are teachllm.sampling's ------------------------------
@pytest.mark.parametrize("lang", list(EDITIONS))
def test_distribution_explorer_is_exact(site, browser, lang):
    import torch

    from teachllm import sampling
    from teachllm.viz import data, static

    outside = []
    checked, worst_page, worst_torch32 = 0, 0.0, 0.0
    for chapter in ("06-logits-to-token", "07-penalties"):
        page = open_page(browser, site, f"{EDITIONS[lang]}chapters/{chapter}.html", outside)
        selector = "[data-teachllm-widget='DistributionExplorer']"
        assert page.locator(selector).count() == 1
        form = form_of(page, selector)
        logits = torch.from_numpy(static.float32_from_base64(form["logits"]).copy())  # [V], what the page holds
        prompt_ids, output_ids, eos = form["prompt_ids"], form["output_ids"], form["eos_token_ids"]
        assert bool(output_ids) == (chapter == "07-penalties")
        for settings in SETTINGS:
            wanted = {**{f: form["defaults"][f] for f in FIELDS}, **settings}
            shown = page.evaluate(SET_AND_READ, [selector, wanted])
            assert shown["promptIds"] == prompt_ids + output_ids
            assert {f: shown["params"][f] for f in FIELDS} == pytest.approx(wanted, abs=1e-12), settings
            params = sampling.SamplingParams(**{f: shown["params"][f] for f in FIELDS})
            d = data.distribution(logits, params, prompt_ids, output_ids, eos, top_n=form["top_n"])
            probs = {int(k): v for k, v in shown["probs"].items()}
            assert set(probs) == set(d.token_ids), settings
            processed = sampling.process_logits(logits, params, prompt_ids, output_ids, eos)  # [V] float32
            if params.greedy:
                exact = torch.zeros(processed.shape, dtype=torch.float64)  # [V]: all the mass on the argmax
                exact[processed.argmax()] = 1.0
            else:
                exact = processed.double().softmax(dim=-1)  # [V]
            page_error = max(abs(probs[i] - float(exact[i])) for i in d.token_ids)
            assert page_error <= TOLERANCE, (settings, page_error)
            worst_page = max(worst_page, page_error)
            worst_torch32 = max(worst_torch32, max(abs(p - float(exact[i])) for i, p in zip(d.token_ids, d.after,
                                                                                             strict=True)))
            kept = [int(processed.argmax())] if params.greedy else processed.isfinite().nonzero()[:, 0].tolist()
            assert shown["kept"] == kept, (settings, len(shown["kept"]), len(kept))
            checked += 1
        # a preset moves the sliders; "sample" draws a kept token and says so
        page.select_option(f"{selector} select[name='preset']", "chat")
        params = json.loads(page.get_attribute(selector, "data-params"))
        assert {f: params[f] for f in FIELDS} == {**{f: form["defaults"][f] for f in FIELDS}, **data.PRESETS["chat"]}
        assert page.input_value(f"{selector} input[name='top_k']") == "40"
        page.click(f"{selector} button.teachllm-sample")
        info = page.locator(f"{selector} .teachllm-live-info").inner_text()
        token = int(re.search(r"id (\d+)", info).group(1))
        assert token in page.evaluate("s => document.querySelector(s).teachllm.kept()", selector)
        if chapter == "06-logits-to-token":
            page.evaluate(SET_AND_READ, [selector, {"temperature": 1.3, "top_p": 0.9}])
            page.locator(selector).scroll_into_view_if_needed()
            page.locator(selector).screenshot(path=SCREENSHOTS / f"live-distribution-{lang}.png")
        page.context.close()
    assert checked == 2 * len(SETTINGS) >= 40
    print(f"\n{lang}: {checked} settings; largest |page − exact| {worst_page:.2e}, "
          f"largest |torch float32 softmax − exact| {worst_torch32:.2e} (over every shown token)")
    assert outside == [], outside


# ---- attention and a serving frame: the engine's numbers -----------------------------------------------
@pytest.mark.parametrize("lang", list(EDITIONS))
def test_attention_view_draws_the_engines_attention(site, browser, lm, lang):
    from teachllm.viz import data

    outside = []
    page = open_page(browser, site, f"{EDITIONS[lang]}chapters/03-prefill-layer-by-layer.html", outside)
    selector = "[data-teachllm-widget='AttentionExplorer']"
    prompt = "The capital of France is Paris. The capital of Italy is"  # chapter 3's
    capture = data.capture_attention(lm, lm.tokenizer.encode(prompt), 0, data.labeller(lm.tokenizer))
    for layer, head in ((5, 7), (0, 1), (29, 3)):
        page.select_option(f"{selector} select[name='layer']", str(layer))
        page.select_option(f"{selector} select[name='head']", str(head))
        assert json.loads(page.get_attribute(selector, "data-state")) == {"layer": layer, "head": head}
        traces = page.evaluate("s => document.querySelector(s).teachllm.figure.data.map(t => ({name: t.name, z: t.z}))",
                               selector)
        k = capture.group_of(head).index(head)
        z = [row for trace in traces[2 * k: 2 * k + 2] for row in trace["z"]]
        expected = capture.probs[layer][head]  # [N, N]
        assert len(z) == expected.shape[0]
        worst = max(abs(v - float(expected[i, j])) for i, row in enumerate(z) for j, v in enumerate(row)
                    if v is not None)
        assert worst < 1e-4, (layer, head, worst)
        assert all((v is None) == bool(expected[i, j].isnan()) for i, row in enumerate(z) for j, v in enumerate(row))
    page.locator(selector).screenshot(path=SCREENSHOTS / f"live-attention-{lang}.png")
    page.context.close()
    assert outside == []


def chapter_run(upto: str) -> dict:
    """Run chapter 12's code cells up to the one containing `upto`; return its variables."""
    source = (ROOT / "notebooks" / "src" / "12-paged-kv-cache.py").read_text(encoding="utf-8")
    namespace: dict = {}
    for cell in re.split(r"^# %%.*$", source, flags=re.M):
        if upto in cell:
            return namespace
        if cell.lstrip().startswith("# ") and all(line.startswith("#") or not line.strip()
                                                    for line in cell.splitlines()):
            continue  # a Markdown cell
        exec(compile(cell, "12-paged-kv-cache.py", "exec"), namespace)
    raise AssertionError(f"no cell contains {upto!r}")


@pytest.mark.parametrize("lang", list(EDITIONS))
def test_block_table_frame_is_the_chapters_run(site, browser, lang):
    from teachllm import viz
    from teachllm.viz import static
    from teachllm.viz.serving import BlockTableView, describe_iteration

    run = chapter_run("BlockTableView(run")["run"]
    outside = []
    page = open_page(browser, site, f"{EDITIONS[lang]}chapters/12-paged-kv-cache.html", outside)
    selector = "[data-teachllm-widget='BlockTableView']"
    viz.set_language(lang)
    try:
        view = BlockTableView(run, start=1, columns=14)
        for iteration in (4, run.timeline[-1].index):
            page.evaluate("([s, i]) => { const input = document.querySelector(s + \" input[name='iteration']\");"
                          "input.value = String(i); input.dispatchEvent(new Event('input', {bubbles: true})); }",
                          [selector, iteration])
            info = page.locator(f"{selector} .teachllm-live-info").inner_text()
            assert info.strip() == describe_iteration(view.records[iteration]).strip()
            drawn = page.evaluate("s => document.querySelector(s).teachllm.figure.data"
                                  ".map(t => ({text: t.text, z: t.z}))", selector)
            expected = static.figure_json(view.spec(iteration))["data"]
            assert drawn == [{"text": t.get("text"), "z": t.get("z")} for t in expected]
        page.click(f"{selector} button[data-action='previous']")
        assert json.loads(page.get_attribute(selector, "data-state")) == {"iteration": run.timeline[-1].index - 1}
    finally:
        viz.set_language("en")
    page.context.close()
    assert outside == []


# ---- every page: drawn, local, no kernel note ------------------------------------------------------------
def test_every_widget_is_drawn_on_every_page(site, browser):
    outside, times, counts = [], {}, {}
    for prefix in EDITIONS.values():
        for path in sorted((SITE / prefix / "chapters").glob("*.html")):
            page = open_page(browser, site, f"{prefix}chapters/{path.name}", outside)
            body = page.content()
            assert "needs a running Python kernel" not in body and "运行着的 Python 环境" not in body, path
            assert page.locator(".teachllm-widget").count() == 0, path
            roots = page.locator("[data-teachllm-widget]")
            for k in range(roots.count()):
                root = roots.nth(k)
                drawn = "[data-question-id]" if root.get_attribute("data-teachllm-widget") == "Quiz" else \
                    ".js-plotly-plot .main-svg"  # a quiz draws its questions; every other widget a figure
                assert root.locator(drawn).count() >= 1, (path, k)
            counts[f"{prefix}{path.stem}"] = roots.count()
            if roots.count():
                times[f"{prefix}{path.stem}"] = {k: round(v) for k, v in page.evaluate(TIMES).items()}
            page.context.close()
    print("\nwidgets per page:", counts)
    print("ms from navigation: page scripts start, every widget drawn; ms the widgets' script took:")
    for name, t in times.items():
        print(f"  {name}: {t['scripts_start_ms']}, {t['widgets_drawn_ms']}; {t['widgets_own_ms']}")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS.parent / "live-book-load-times.json").write_text(json.dumps(times, indent=1))
    assert sum(counts.values()) == 2 * (11 + 13)  # every widget of the 13 chapters and their quizzes, both editions
    assert outside == [], outside
