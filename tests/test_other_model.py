"""Another model than the bundled one, through TEACHLLM_MODEL, and the lecturer's guide's note on Chinese (issue 37).

A class that wants a model which speaks Chinese sets TEACHLLM_MODEL to a checkpoint folder, and every `tl.load()`
in the chapters loads it. Here the folder is a tiny random model of the Qwen2 architecture (Qwen2.5's) with the
bundled tokenizer, made on the spot: nothing is downloaded. The guide's paragraph on per-token perplexity quotes
numbers; they are computed again here on the bundled model, in both editions of the guide.
"""

import shutil
from pathlib import Path

import pytest
import torch
import transformers

import teachllm as tl
from teachllm import texts
from teachllm.bench.decode import bits_per_byte, perplexity
from teachllm.checkpoints.loading import checkpoint_folder
from teachllm.lm import MODEL_ENV

ROOT = Path(__file__).resolve().parents[1]
GUIDES = {"en": ROOT / "book" / "lecturers-guide.md", "zh": ROOT / "book" / "zh" / "lecturers-guide.md"}
NOTE = {"en": "## The bundled model and Chinese", "zh": "## 内置模型与中文"}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json")


@pytest.fixture(scope="module")
def tiny_qwen2(tmp_path_factory) -> Path:
    """A 2-layer Qwen2 checkpoint (q/k/v biases, tied embeddings, grouped-query attention) with SmolLM2's tokenizer."""
    folder = tmp_path_factory.mktemp("tiny-qwen2")
    bundled = checkpoint_folder(None, progress=False)
    tokenizer = tl.load(progress=False).tokenizer  # the bundled model's: its vocabulary sets the embedding's size
    config = transformers.Qwen2Config(
        vocab_size=tokenizer.vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048, tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    model = transformers.Qwen2ForCausalLM(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.normal_(0, 0.3)  # large enough that attention is not uniform and the biases matter
    model.save_pretrained(folder)
    for name in TOKENIZER_FILES:
        if (bundled / name).is_file():
            shutil.copy(bundled / name, folder / name)
    return folder


def test_the_variable_loads_its_folder_with_transformers_logits(tiny_qwen2, monkeypatch):
    monkeypatch.setenv(MODEL_ENV, str(tiny_qwen2))
    lm = tl.load(device="cpu", dtype="float32", progress=False)
    assert lm.name == str(tiny_qwen2) and lm.config.n_layers == 2 and lm.config.qkv_bias
    ids = lm.tokenizer.encode("印刷术是中国古代四大发明之一。")
    hf = transformers.AutoModelForCausalLM.from_pretrained(tiny_qwen2, dtype=torch.float32).eval()
    with torch.no_grad():
        want = hf(torch.tensor([ids])).logits  # [1, S, V]
    assert (lm.forward(ids) - want).abs().max() < 1e-4
    out = lm.generate("你好", tl.SamplingParams(max_tokens=4))
    assert len(out.token_ids) == 4  # random weights: what it says does not matter, only that it runs


def test_an_explicit_argument_wins_over_the_variable(tiny_qwen2, monkeypatch):
    monkeypatch.setenv(MODEL_ENV, str(tiny_qwen2 / "nothing-here"))
    assert tl.load(tiny_qwen2, device="cpu", progress=False).config.n_layers == 2


def test_a_path_that_does_not_load_names_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(MODEL_ENV, str(tmp_path / "no-such-model"))
    with pytest.raises(tl.ModelNotFoundError, match=f"{MODEL_ENV}=.*unset {MODEL_ENV} to load the bundled model"):
        tl.load(progress=False)


@pytest.mark.parametrize("chapter", ["02-tokens", "06-logits-to-token"])
def test_the_chapters_the_guide_names_run_on_it(tiny_qwen2, monkeypatch, chapter):
    """What the guide says CI shows: these chapters run from top to bottom with TEACHLLM_MODEL set, and the model
    they ran on is the tiny one (a last cell asks)."""
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv(MODEL_ENV, str(tiny_qwen2))  # the kernel inherits the environment
    path = ROOT / "notebooks" / f"{chapter}.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells = [c for c in nb.cells if c.cell_type == "code"]
    nb.cells.append(nbformat.v4.new_code_cell("print(lm.name, lm.config.n_layers)"))
    NotebookClient(nb, timeout=300, kernel_name="python3", store_widget_state=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()  # raises on a failing cell
    assert nb.cells[-1].outputs[0]["text"] == f"{tiny_qwen2} 2\n"


# ---- the guide's note: every number it gives, computed again -------------------------------------------------
def note(lang: str) -> str:
    text = GUIDES[lang].read_text(encoding="utf-8")
    return text[text.index(NOTE[lang]):]


def test_the_guides_perplexity_numbers(lm32):
    tok = lm32.tokenizer
    found = {}
    for name, text in (("english", texts.ENGLISH), ("chinese", texts.CHINESE)):
        ids = tok.encode(text)
        logits = lm32.forward(ids)  # [1, S, V]
        found[name] = dict(ppl=perplexity(logits, ids), bpb=bits_per_byte(logits, ids, tok), tokens=len(ids),
                           chars=len(text))
    en, zh = found["english"], found["chinese"]
    # the point of the paragraph: per token Chinese looks better, per byte it is worse
    assert zh["ppl"] < en["ppl"] and zh["bpb"] > 2 * en["bpb"]
    quoted = [f"{en['ppl']:.2f}", f"{zh['ppl']:.2f}", f"{en['bpb']:.2f}", f"{zh['bpb']:.2f}",
              f"{zh['bpb'] / en['bpb']:.1f}", str(zh["tokens"]), str(zh["chars"]), str(en["tokens"]), str(en["chars"])]
    for lang in GUIDES:
        missing = [n for n in quoted if n not in note(lang)]
        assert not missing, f"{GUIDES[lang].name} ({lang}): the note does not give {missing}; it should say {quoted}"


def test_the_answer_the_guide_quotes_is_the_one_chapter_9_saved():
    import nbformat

    from teachllm import viz

    answer = "你自己是一个独立的客户，可以"
    for lang, path in (("en", "09-stopping.ipynb"), ("zh", "zh/09-stopping.ipynb")):
        nb = nbformat.read(ROOT / "notebooks" / path, as_version=4)
        saved = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
        before = viz.language()
        viz.set_language(lang)  # chapter 9 prints the line through viz.tr, in the edition's language
        try:
            line = viz.tr("full text      : {text}", text=answer)
        finally:
            viz.set_language(before)
        assert f"{line}\n" in saved, path
        assert answer in note(lang)


def test_the_bits_per_byte_formula():
    """bits_per_byte against its definition on hand-made logits: a uniform guess over V tokens costs log2(V) bits
    per token, shared out over the text's bytes."""
    class Bytes:  # a tokenizer whose every id is one byte of text
        def decode(self, ids, skip_special_tokens=False):
            return "".join(chr(97 + i) for i in ids)

    V, ids = 8, [1, 2, 3, 4, 5]
    logits = torch.zeros(1, len(ids), V)  # [1, S, V] uniform
    assert bits_per_byte(logits, ids, Bytes()) == pytest.approx(3.0 * (len(ids) - 1) / len(ids))
