"""Chapter 10's roofline figures as its committed notebooks drew them (each edition measured its own points on
the machine that built it; the H100 points are the chapter's prediction), made again by teachllm.viz: the cases
tests/test_viz_labels.py checks on the spec and tests/browser/test_projector.py draws in Chromium."""

from teachllm import viz
from teachllm.roofline import Device, PhasePoint
from teachllm.viz import figures


def points(prefill, decode) -> list[PhasePoint]:
    """PhasePoints at (intensity, FLOP/s): prefill (s, x, y), decode (b, T, x, y)."""
    return ([PhasePoint("prefill", 1, s, x, 1, x / y) for s, x, y in prefill]
            + [PhasePoint("decode", b, t, x, 1, x / y) for b, t, x, y in decode])


def chapter_10(language: str) -> dict:
    """name → (traces, layout) of chapter 10's three roofline figures, labelled in `language`."""
    if language == "en":
        cpu = Device("cpu, 2 threads", 2.161e11, 2.161e11 / 4.734, "float32", "measured")
        measured = points([(16, 6.435, 6.254e10), (64, 25.61, 1.246e11), (300, 123.7, 1.715e11)],
                          [(1, 301, 0.525, 7.108e9), (16, 301, 6.095, 6.512e10)])
    else:
        cpu = Device("cpu, 2 threads", 2.104e11, 2.104e11 / 3.428, "float32", "measured")
        measured = points([(16, 6.435, 5.059e10), (64, 25.61, 1.006e11), (300, 123.7, 1.468e11)],
                          [(1, 301, 0.525, 6.737e9), (16, 301, 6.095, 4.065e10)])
    h100 = Device("H100 SXM", 989e12, 3.35e12, "bfloat16", "spec sheet")
    predicted = points([(300, 290.7, 9.737e14), (1000, 944.3, 9.89e14)],
                       [(1, 1001, 0.9999, 3.35e12), (64, 1001, 18.77, 6.289e13)])
    rows = [dict(name=name, intensity=x, predicted_flops=cpu.attainable(x), measured_flops=y)
            for name, x, y in (("float32", 0.508, 6.634e9), ("bfloat16", 1.016, 9.903e9),
                               ("int8 (Q8_0)", 1.87, None), ("4-bit (this file)", 2.591, 2.165e10))]
    before = viz.language()
    viz.set_language(language)
    try:
        return {"10.8 measured": figures.roofline_spec(cpu, measured),
                "10.8 H100": figures.roofline_spec(h100, predicted),
                "10.13 precisions": figures.precision_roofline_spec(cpu, rows)}
    finally:
        viz.set_language(before)
