"""Run every chapter's code, cell by cell, and report the cells that fail.

Two ways, the same answer:
- `--engine cells` (what `auto` picks without Jupyter): the code cells come straight from notebooks/src/NN-name.py
  (jupytext's percent format) and run in a fresh Python process, in the folder the chapter's notebook sits in; a
  cell's last expression is shown the way a notebook shows it (`_repr_mimebundle_`, `_repr_html_`, `repr`), so
  figures and widgets are built too. The Chinese edition is the same code after `viz.set_language("zh")`, as
  scripts/build_notebooks.py builds it.
- `--engine kernel` (what `auto` picks where nbclient and ipykernel are installed): the committed notebook itself,
  executed in a Jupyter kernel by nbclient, as a reader's JupyterLab runs it.
Outputs are not compared with the committed notebooks: this asks only that no cell fails, on whatever device and dtype
the environment picks (TEACHLLM_DEVICE, TEACHLLM_DTYPE, as `tl.load()` reads them).

    TEACHLLM_DTYPE=bfloat16 python scripts/run_chapters.py            # every chapter, both editions, on the CPU in bf16
    python scripts/run_chapters.py 04 06 --lang en                    # two chapters, one edition
    python scripts/run_chapters.py --device second 04                 # on an emulated second device
                                                                      # (tests/second_device.py)

`make test-bf16` (in CI) and `make gpu-check` run it. The check cells of the exercises need otter-grader: where it is
not installed (a bare GPU machine), those cells are skipped and counted. Prints one line per chapter, then a summary;
exits 1 if any cell failed.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
LANGUAGES = ("en", "zh")


def code_cells(src: Path) -> list[str]:
    """The code cells of a percent-format source, in order (Markdown cells dropped)."""
    cells, kind, lines = [], None, []
    for line in src.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("# %%"):
            if kind == "code":
                cells.append("".join(lines))
            kind, lines = ("markdown" if "[markdown]" in line else "code"), []
        elif kind is not None:
            lines.append(line)
    if kind == "code":
        cells.append("".join(lines))
    return [c for c in cells if c.strip()]


def show(value) -> None:
    """Render a cell's last value as a notebook would, so a figure or widget builds what it displays."""
    if value is None:
        return
    for name in ("_repr_mimebundle_", "_repr_html_"):
        method = getattr(value, name, None)
        if callable(method):
            method()
            return
    repr(value)


def run_cells(src: Path, lang: str) -> dict:
    """Execute one chapter's cells in this process; a failing cell is recorded and the next one runs."""
    cells = code_cells(src)
    if lang != "en":
        cells.insert(0, f'from teachllm import viz\nviz.set_language("{lang}")')
    with_checks = graded()
    namespace = {"__name__": "__main__"}
    failures, skipped, start = [], 0, time.perf_counter()
    for k, source in enumerate(cells):
        if not with_checks and ("grading" in source or "grader." in source):
            skipped += 1
            continue
        try:
            tree = ast.parse(source)
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            exec(compile(tree, f"<{src.stem} cell {k}>", "exec"), namespace)
            if last is not None:
                show(eval(compile(ast.Expression(last.value), f"<{src.stem} cell {k}>", "eval"), namespace))
        except Exception as e:  # noqa: BLE001 - every failing cell is reported, then the chapter goes on
            frames = [line for line in traceback.format_exc().splitlines() if line.startswith("  File")
                      and "second_device.py" not in line]  # the emulation's own frames say nothing about the bug
            where = frames[-1:]
            failures.append({"cell": k, "error": f"{type(e).__name__}: {e}"[:500], "where": where})
    return {"chapter": src.stem, "lang": lang, "cells": len(cells), "skipped": skipped, "failed": len(failures),
            "seconds": round(time.perf_counter() - start, 1), "failures": failures}


EMULATE = (f"import sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\nimport second_device\n\n"
           "second_device.install()  # tl.load() returns models on the emulated second device, CUDA's rules enforced")


def graded() -> bool:
    """Whether otter-grader is here: the exercises' check cells run its public checks."""
    try:
        import otter  # noqa: F401
    except ImportError:
        return False
    return True


def run_kernel(src: Path, lang: str, device: str | None, timeout: float) -> dict:
    """Execute the committed notebook of one chapter in a Jupyter kernel (nbclient), every cell even after a failure."""
    import nbformat
    from nbclient import NotebookClient

    path = NOTEBOOKS / (f"{src.stem}.ipynb" if lang == "en" else f"{lang}/{src.stem}.ipynb")
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    with_checks = graded()
    kept = [k for k, c in enumerate(code) if with_checks or ("grading" not in c.source and "grader." not in c.source)]
    nb.cells = [code[k] for k in kept]  # the code cells, numbered as in the chapter
    for cell in nb.cells:
        cell.outputs = []
    if device == "second":
        nb.cells.insert(0, nbformat.v4.new_code_cell(EMULATE))
    start = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=True, store_widget_state=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    failures = []
    for k, cell in zip(kept, nb.cells[1:] if device == "second" else nb.cells, strict=True):
        for out in cell.outputs:
            if out.output_type == "error":
                failures.append({"cell": k, "error": f"{out.ename}: {out.evalue}"[:500], "where": []})
    return {"chapter": src.stem, "lang": lang, "cells": len(code), "skipped": len(code) - len(kept),
            "failed": len(failures),
            "seconds": round(time.perf_counter() - start, 1), "failures": failures}


def child(src: Path, lang: str, device: str | None, engine: str, timeout: float) -> None:
    """The body of one chapter's process: run the cells here (optionally on the emulated second device), or have a
    Jupyter kernel run the notebook."""
    sys.path.insert(0, str(ROOT))
    if engine == "kernel":
        print("RESULT " + json.dumps(run_kernel(src, lang, device, timeout)), flush=True)
        return
    os.chdir(NOTEBOOKS if lang == "en" else NOTEBOOKS / lang)
    if device == "second":
        exec(EMULATE, {})
    print("RESULT " + json.dumps(run_cells(src, lang)), flush=True)


def pick_engine(engine: str) -> str:
    """auto: a kernel where nbclient and ipykernel are installed (as a reader runs the notebooks), else the cells."""
    if engine != "auto":
        return engine
    try:
        import ipykernel  # noqa: F401
        import nbclient  # noqa: F401
    except ImportError:
        return "cells"
    return "kernel"


def run_one(src: Path, lang: str, args) -> dict:
    command = [sys.executable, __file__, "--child", str(src), lang, "--engine", args.engine,
               "--timeout", str(args.timeout)] + (["--device", args.device] if args.device else [])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TEACHLLM_STATIC_FIGURES": "0", "PYTHONUNBUFFERED": "1"}
    if args.device and args.device != "second":
        env["TEACHLLM_DEVICE"] = args.device
    if args.threads:
        env["OMP_NUM_THREADS"] = str(args.threads)
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"chapter": src.stem, "lang": lang, "failed": 1, "seconds": args.timeout,
                "failures": [{"cell": None, "error": f"the chapter ran past {args.timeout} s"}]}
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        return {"chapter": src.stem, "lang": lang, "failed": 1, "seconds": 0,
                "failures": [{"cell": None, "error": f"the process ended ({done.returncode}) without a result: "
                                                     + done.stderr.strip()[-800:]}]}
    return json.loads(lines[-1].removeprefix("RESULT "))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefixes", nargs="*", help="only the chapters whose names start with these (default: all)")
    parser.add_argument("--lang", choices=LANGUAGES, action="append", help="one edition (default: both)")
    parser.add_argument("--device", help="cpu, cuda, ... or second: an emulated second device (tests/second_device.py)"
                                         "; default: TEACHLLM_DEVICE, else auto")
    parser.add_argument("--engine", choices=("auto", "cells", "kernel"), default="cells",
                        help="cells: the sources' cells in this Python (default); kernel: the committed notebooks in a "
                             "Jupyter kernel; auto: a kernel where Jupyter is installed")
    parser.add_argument("--jobs", type=int, default=1, help="chapters run at once (default 1)")
    parser.add_argument("--threads", type=int, help="torch threads per chapter (OMP_NUM_THREADS)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds a chapter may take (default 900)")
    parser.add_argument("--json", type=Path, help="write every chapter's result here")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), args.child[1], args.device, args.engine, args.timeout)
        return 0
    args.engine = pick_engine(args.engine)
    sources = sorted((NOTEBOOKS / "src").glob("[0-9][0-9]-*.py"))
    if args.prefixes:
        sources = [s for s in sources if s.name.startswith(tuple(args.prefixes))]
    if not sources:
        print("run_chapters: no chapter matched", ", ".join(args.prefixes), file=sys.stderr)
        return 2
    jobs = [(src, lang) for src in sources for lang in args.lang or LANGUAGES]
    start = time.perf_counter()
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = []
        for result in pool.map(lambda job: run_one(*job, args), jobs):
            results.append(result)
            name = result["chapter"] if result["lang"] == "en" else f"{result['lang']}/{result['chapter']}"
            skipped = f", {result['skipped']} check cells skipped (no otter)" if result.get("skipped") else ""
            print(f"{name}: {result['failed']} of {result.get('cells', '?')} cells failed{skipped}, "
                  f"{result['seconds']} s", flush=True)
            for f in result["failures"]:
                where = f"  [{f['where'][0].strip()}]" if f.get("where") else ""
                print(f"    cell {f['cell']}: {f['error']}{where}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    failed = sum(r["failed"] for r in results)
    cells = sum(r.get("cells", 0) for r in results)
    device = args.device or os.environ.get("TEACHLLM_DEVICE", "auto")
    dtype = os.environ.get("TEACHLLM_DTYPE", "the default dtype")
    print(f"chapters on {device}, {dtype} ({args.engine}): {len(results)} runs, {cells} cells, {failed} failed "
          f"({time.perf_counter() - start:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
