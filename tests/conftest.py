"""Shared fixtures: the bundled model in teachllm and in transformers, loaded once per test session.

Nothing here may reach the network: the Hub is switched off before anything imports it.
"""

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import pytest  # noqa: E402
import torch  # noqa: E402

import teachllm as tl  # noqa: E402

DISPATCH_VARIABLES = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS",
                      "FBGEMM_ENABLE_INSTRUCTIONS")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI=true no test may skip: CI installs everything the tests need (chromium, fonts, the extras), so
    a skip there means a test silently stopped testing. Outside CI a skip stays a skip, with its reason."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") == "true" and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, where every test must run: {report.longrepr}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """The same for a whole module skipped at import (pytest.importorskip): an error under CI=true."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") == "true" and report.skipped:
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, where every test must run: {report.longrepr}"


def pytest_collection_modifyitems(items):
    """Two orderings that keep the run's memory low, neither of which changes what a test checks:
    - a test module that defines `run_in_order_of(item)` has its tests run sorted by that key (a stable sort,
      within the module): tests that share an expensive setup run one after another, and it is built once;
    - the modules that use a shared model (SHARED_MODELS) run first, grouped by model, so that each model is
      released early and the rest of the run does not carry it."""
    modules: list[list] = []  # the collected items, one list per module, in collection order
    for item in items:
        if modules and modules[-1][0].module is item.module:
            modules[-1].append(item)
        else:
            modules.append([item])
    for group in modules:
        key = getattr(group[0].module, "run_in_order_of", None)
        if callable(key):
            group.sort(key=key)

    def first_shared_model(group) -> int:
        used = [i for i, name in enumerate(SHARED_MODELS)
                for item in group if name in getattr(item, "fixturenames", ())]
        return min(used, default=len(SHARED_MODELS))

    modules.sort(key=first_shared_model)  # stable: collection order within each rank
    items[:] = [item for group in modules for item in group]
    for item in items:
        for name in SHARED_MODELS:
            if name in getattr(item, "fixturenames", ()):
                LAST_USER[name] = item.nodeid


def pytest_report_header(config):
    """Which kernels this run uses: PyTorch's CPU dispatch (AVX2, AVX512, …) and what the environment asked."""
    asked = ", ".join(f"{v}={os.environ[v]}" for v in DISPATCH_VARIABLES if v in os.environ) or "the CPU's best"
    return f"CPU dispatch: {torch.backends.cpu.get_cpu_capability()} (asked: {asked})"


# The device and dtype of the bundled model in the tests: the CPU in float32 unless TEACHLLM_DEVICE /
# TEACHLLM_DTYPE say otherwise (`make gpu-check` runs the engine's tests on a GPU in float32 and bfloat16;
# TEACHLLM_DEVICE=second runs them on the emulated second device of tests/second_device.py).
DEVICE = os.environ.get("TEACHLLM_DEVICE", "cpu")
DTYPE = os.environ.get("TEACHLLM_DTYPE", "float32")
if DEVICE == "second":  # the emulated second device (tests/second_device.py): device bugs show as on a GPU
    import second_device  # noqa: E402

    second_device.install()


@pytest.fixture(scope="session")
def lm():
    """The bundled SmolLM2-135M-Instruct in teachllm (float32 on the CPU unless pinned otherwise)."""
    return tl.load(device=DEVICE, dtype=DTYPE, progress=False)


@pytest.fixture(scope="session")
def lm32(lm):
    """The bundled model on the CPU in float32, as the committed notebooks, their widgets' saved forms and the quiz
    keys were computed: `lm` itself unless the tests run on another device or dtype."""
    if lm.device.type == "cpu" and lm.dtype == torch.float32:
        return lm
    return tl.load(device="cpu", dtype="float32", progress=False)


@pytest.fixture(scope="session")
def tol(lm):
    """How far two computations of the same numbers may differ in the model's dtype (teachllm.tolerances): the
    float32 bounds the tests have always used, and bounds argued from 16-bit precision in bfloat16 and float16."""
    return tl.tolerance(lm.dtype)


@pytest.fixture(scope="session")
def agree_until_a_near_tie():
    """teachllm.tolerances.agree_until_a_near_tie: the rule the chapters use too."""
    return tl.tolerances.agree_until_a_near_tie


# Models that several test files use, beyond `lm`: each is loaded once, on first use, and released after the last
# test that uses it (found when the tests are collected), so that the run holds only the models it still needs.
SHARED_MODELS = ("hf_model", "qlm_int4")  # the fixtures below that load one
SHARED: dict[str, object] = {}
LAST_USER: dict[str, str] = {}  # shared fixture → the node id of the last collected test that uses it


def shared(name: str, load):
    if name not in SHARED:
        SHARED[name] = load()
    return SHARED[name]


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    for name, last in LAST_USER.items():
        if last == item.nodeid:
            SHARED.pop(name, None)
    if nextitem is None or nextitem.path != item.path:
        # the grader's own model (scripts/grade_sandbox.py keeps it for a whole grader run): a test file that
        # graded in this process is done with it, and the files after it would carry it
        sandbox = sys.modules.get("grade_sandbox")
        if sandbox is not None:
            sandbox._pristine_model.clear()


@pytest.fixture(scope="module")
def hf_model(lm):
    """The same weights in transformers' own LlamaForCausalLM: the reference."""
    def load():
        from transformers import AutoModelForCausalLM

        folder = tl.checkpoints.loading.checkpoint_folder(progress=False)
        return AutoModelForCausalLM.from_pretrained(folder, dtype=lm.dtype).to(lm.device).eval()

    return shared("hf_model", load)


@pytest.fixture(scope="module")
def qlm_int4():
    """The bundled model on the GGUF's own 4-bit blocks, every matrix on PyTorch's int4 kernel (the same on every
    CPU). Shared by the fast-path, kernel and C-kernel tests: a test that changes its kernels puts int4 back."""
    return shared("qlm_int4", lambda: tl.load(weights="gguf", kernel="int4", progress=False))


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread for a whole test module. Small matrices gain nothing from threads, and on a busy
    machine threads waiting for each other make them many times slower. Use it with
    `pytestmark = pytest.mark.usefixtures("one_thread")`."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def long_prompt(lm):
    """An English paragraph of well over 64 tokens."""
    ids = lm.tokenizer.encode(tl.texts.ENGLISH)
    assert len(ids) >= 64
    return ids


def greedy_with_cache(lm, ids, n_new):
    """teachllm's greedy loop (prefill, then decode_step after decode_step), stopping at end-of-sequence as
    transformers' generate does."""
    tokens, _ = tl.generate.greedy(lm, ids, n_new)
    end = next((i for i, t in enumerate(tokens) if t in lm.config.eos_token_ids), len(tokens) - 1)
    return tokens[:end + 1]


@pytest.fixture(scope="session")
def greedy():
    return greedy_with_cache
