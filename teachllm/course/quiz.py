"""The chapters' self-check quizzes: load, validate, and compute the answer keys that are facts about the model.

Each chapter NN has, in notebooks/quizzes/,

    NN.en.yaml, NN.zh.yaml   the questions in English and Chinese: {"chapter": NN, "questions": [...]}, the same
                             ids, types, options and typed-in answers in both; only the words differ
    NN.keys.py               (optional) one function per computed answer, `def <id_with_underscores>(lm) -> dict`:
                             {"answer": ..., "options": [...] (choice, next-token), other named fields}

and keys.json holds every computed answer of every chapter, as the engine gave it when the quizzes were built:

    python -m teachllm.course.quiz build    # run every NN.keys.py on the bundled model, write keys.json
    python -m teachllm.course.quiz check    # compute them again, compare with keys.json; exit 1 on a difference
    python -m teachllm.course.quiz build 3  # only chapter 3 (the other chapters' entries stay)

A question's final form is its YAML entry with its keys.json entry filled in: the options and the answer of a
computed question come from the engine, never from the YAML, and its explanation is a `str.format` template over
the entry's fields ("{answer:,} bytes"; a literal brace is written twice). `load(chapter, lang)` gives the final
questions; `viz.Quiz(chapter)` shows them, and the book shows the same data with no kernel.

Question fields (the quiz data convention): id (kebab-case, unique), type (choice | numeric | next-token),
question (inline Markdown), explanation, and by type: options + answer (choice, or `key`), answer or `key` and
optionally tolerance (absolute) and unit (numeric), prompt or chat and `key` (next-token); from_guide: true marks
a question from the lecturer's guide's "Ask the room".
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import html
import importlib.util
import inspect
import json
import math
import random
import re
import string
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

QUIZZES = Path(__file__).resolve().parents[2] / "notebooks" / "quizzes"
KEYS_JSON = QUIZZES / "keys.json"
CHAPTERS = range(1, 14)
LANGUAGES = ("en", "zh")
TYPES = ("choice", "numeric", "next-token")
N_QUESTIONS = (5, 10)  # fewest and most questions a chapter has
N_OPTIONS = (3, 5)  # fewest and most options a choice has
RELATIVE_TOLERANCE = 1e-6  # a numeric answer's tolerance when the question gives none
KEYS_TOLERANCE = 1e-6  # `check`: how far (relative) a recomputed number may be from keys.json
FIELDS = {  # every field a question may have, and whether both languages must hold the same value
    "id": True, "type": True, "question": False, "options": False, "answer": True, "key": True, "tolerance": True,
    "unit": False, "explanation": False, "from_guide": True, "prompt": True, "chat": True,
}


class QuizError(ValueError):
    """A quiz file that breaks the convention; the message names the file and the question."""


@dataclass
class Question:
    """One question in its final form: the YAML entry with its computed key (if any) filled in."""

    id: str
    type: str  # choice | numeric | next-token
    question: str  # inline Markdown
    explanation: str  # with the key's fields filled in
    answer: int | float  # the right option's index (choice, next-token) or the number (numeric)
    options: list[str] = field(default_factory=list)  # choice, next-token
    tolerance: float | None = None  # numeric: absolute; None means relative RELATIVE_TOLERANCE
    unit: str = ""  # numeric
    prompt: str | None = None  # next-token: the text whose next token is asked
    chat: str | None = None  # next-token: a user message put through the chat template
    from_guide: bool = False

    def is_right(self, response) -> bool:
        """Whether `response` (an option's index, or a number) is the right answer."""
        if response is None:
            return False
        if self.type == "numeric":
            response = float(response)
            allowed = self.tolerance if self.tolerance is not None else RELATIVE_TOLERANCE * abs(self.answer)
            return abs(response - self.answer) <= allowed
        return int(response) == self.answer

    def answer_text(self) -> str:
        """The right answer as the reader sees it: the option's text, or the number with its unit."""
        if self.type == "numeric":
            number = f"{self.answer:,}" if float(self.answer).is_integer() else f"{self.answer:,.6g}"
            return f"{number} {self.unit}".strip()
        return self.options[self.answer]


# ---- reading and validating ----------------------------------------------------------------------------
def path(chapter: int, lang: str) -> Path:
    return QUIZZES / f"{chapter:02d}.{lang}.yaml"


def function_name(question_id: str) -> str:
    """The NN.keys.py function of a question id: "greedy-next" → "greedy_next"."""
    return question_id.replace("-", "_")


def _fail(where: str, message: str):
    raise QuizError(f"{where}: {message}")


def _utf8_text(file: Path) -> str:
    """The text of a quiz file, which must be UTF-8 (a Chinese editor may save GB18030 or GBK)."""
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise QuizError(f"{file}: not UTF-8 text (byte {e.object[e.start]:#04x} at position {e.start} is not "
                        "UTF-8; perhaps it was saved as GB18030/GBK): save it as UTF-8") from None


class _DuplicateKey(yaml.YAMLError):
    def __init__(self, key, line: int):
        super().__init__(f"the key {key!r} is given twice (line {line})")
        self.key, self.line = key, line


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a mapping with the same key twice (PyYAML keeps the last one silently)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                key = self.construct_object(key_node)
                if key in seen:
                    raise _DuplicateKey(key, key_node.start_mark.line + 1)
                seen.add(key)
        return super().construct_mapping(node, deep)


def read(chapter: int, lang: str) -> list[dict]:
    """The questions of one chapter in one language as written, after checking each against the convention
    (keys are not filled in: see `load`)."""
    file = path(chapter, lang)
    if lang not in LANGUAGES:
        raise QuizError(f"language must be one of {', '.join(LANGUAGES)}, got {lang!r}")
    if not file.is_file():
        raise QuizError(f"{file}: no such quiz file (chapter {chapter}, language {lang})")
    try:
        data = yaml.load(_utf8_text(file), Loader=_UniqueKeyLoader)
    except _DuplicateKey as e:
        raise QuizError(f"{file}, line {e.line}: the key {e.key!r} is given twice in one mapping, and YAML would "
                        "silently keep only the last: delete the one you do not mean") from None
    except yaml.YAMLError as e:
        raise QuizError(f"{file}: not valid YAML: {e}") from None
    if not isinstance(data, dict) or set(data) != {"chapter", "questions"}:
        _fail(str(file), "must be a mapping with exactly the keys `chapter` and `questions`")
    if data["chapter"] != chapter:
        _fail(str(file), f"says chapter {data['chapter']!r}, its name says {chapter}")
    questions = data["questions"]
    low, high = N_QUESTIONS
    if not isinstance(questions, list) or not low <= len(questions) <= high:
        _fail(str(file), f"`questions` must be a list of {low} to {high} questions")
    seen = set()
    for n, q in enumerate(questions, 1):
        where = f"{file.name}, question {n}" + (f" ({q.get('id')})" if isinstance(q, dict) and "id" in q else "")
        validate(q, where)
        if q["id"] in seen:
            _fail(where, f"the id {q['id']!r} is used twice")
        seen.add(q["id"])
    return questions


# "the third option", "the last option", 第三个选项, 最后一个选项: wrong once `shuffled` reorders the options
BY_POSITION = re.compile(r"\b(first|second|third|fourth|fifth|last)\s+(option|choice)\b|"
                         r"(第[一二三四五1-5]|最后一)个选项|选项\s*[A-E1-5]\b", re.IGNORECASE)


def validate(q: dict, where: str) -> None:
    """Check one question as written; raise QuizError saying what is wrong."""
    if not isinstance(q, dict):
        _fail(where, "a question must be a mapping")
    unknown = sorted(set(q) - set(FIELDS))
    if unknown:
        _fail(where, f"unknown field(s) {', '.join(unknown)} (allowed: {', '.join(FIELDS)})")
    for name in ("id", "type", "question", "explanation"):
        if not isinstance(q.get(name), str) or not q[name].strip():
            _fail(where, f"missing field `{name}` (a non-empty string)")
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", q["id"]):
        _fail(where, f"id {q['id']!r} must be kebab-case: lower-case letters and digits joined by '-'")
    kind = q["type"]
    if kind not in TYPES:
        _fail(where, f"unknown type {kind!r} (one of: {', '.join(TYPES)})")
    if "key" in q and q["key"] != function_name(q["id"]):
        _fail(where, f"key {q['key']!r} must name the function of its id, {function_name(q['id'])!r}")
    if "key" in q and "answer" in q:
        _fail(where, "has both `key` and `answer`: a computed answer is never typed in")
    if "key" not in q and "answer" not in q:
        _fail(where, "missing field `answer` (or `key`, for an answer the engine computes)")
    if kind != "numeric" and ("tolerance" in q or "unit" in q):
        _fail(where, "`tolerance` and `unit` are for numeric questions only")
    if kind != "next-token" and ("prompt" in q or "chat" in q):
        _fail(where, "`prompt` and `chat` are for next-token questions only")
    if kind == "choice" and "key" not in q:
        options = q.get("options")
        low, high = N_OPTIONS
        if not isinstance(options, list) or not low <= len(options) <= high or not all(
                isinstance(o, str) and o.strip() for o in options):
            _fail(where, f"a choice needs `options`: a list of {low} to {high} non-empty strings")
        _check_index(q["answer"], len(options), where)
    if kind == "numeric":
        if "answer" in q:
            _check_number(q["answer"], "a numeric answer", where)
        tolerance = q.get("tolerance", 0)
        if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or tolerance < 0:
            _fail(where, f"tolerance must be a number ≥ 0, got {tolerance!r}")
        if not math.isfinite(tolerance):
            _fail(where, f"tolerance must be a finite number ≥ 0, got {tolerance!r} (with inf every answer would be "
                  "right, with nan none): write how far from the answer a response may be, e.g. 0.5")
    if kind == "next-token":
        if "key" not in q:
            _fail(where, "a next-token question needs `key`: the engine says which token comes next")
        if ("prompt" in q) == ("chat" in q) or not isinstance(q.get("prompt", q.get("chat")), str):
            _fail(where, "a next-token question needs exactly one of `prompt` (plain text) and `chat` (a user message)")
    if kind != "numeric" and BY_POSITION.search(q["explanation"]):
        _fail(where, f"the explanation names an option by its position ({BY_POSITION.search(q['explanation'])[0]!r}), "
              "but the options are shown shuffled: name it by what it says")
    if "from_guide" in q and not isinstance(q["from_guide"], bool):
        _fail(where, "from_guide must be true or false")
    if "key" in q:
        template_fields(q["explanation"], where)


def template_fields(explanation: str, where: str) -> set[str]:
    """The fields a computed question's explanation names ("{answer:,} bytes" → {"answer"}); a literal brace in
    it must be written twice."""
    try:
        return {name for _, name, _, _ in string.Formatter().parse(explanation) if name}
    except ValueError as e:
        _fail(where, f"the explanation is not a valid template ({e}): it fills in the key's fields, written as "
              "{answer}; write a literal brace twice, {{ or }}")


def _check_number(value, what: str, where: str) -> None:
    """A numeric answer: an int or a float, and finite (YAML reads .nan and .inf as floats)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(where, f"{what} must be a number, got {value!r}")
    if math.isnan(value):
        _fail(where, f"{what} must be a number, got nan (not a number): write the answer, e.g. 4 or 0.5")
    if math.isinf(value):
        _fail(where, f"{what} must be finite, got {value!r}: write the answer, e.g. 4 or 0.5")


def _check_index(answer, n_options: int, where: str) -> None:
    if isinstance(answer, bool) or not isinstance(answer, int) or not 0 <= answer < n_options:
        _fail(where, f"answer {answer!r} is not an option's index (0 to {n_options - 1})")


def compare_languages(chapter: int, en: list[dict], zh: list[dict]) -> None:
    """The two languages must ask the same questions: same ids in the same order, same types, same number of
    options, the same typed-in answers, keys, tolerances and prompts."""
    where = f"{chapter:02d}.en.yaml / {chapter:02d}.zh.yaml"
    ids = [q["id"] for q in en], [q["id"] for q in zh]
    if ids[0] != ids[1]:
        _fail(where, f"the ids differ: {ids[0]} / {ids[1]}")
    for a, b in zip(en, zh, strict=True):
        for name, same in FIELDS.items():
            if same and a.get(name) != b.get(name):
                _fail(f"{where}, {a['id']}", f"`{name}` differs: {a.get(name)!r} / {b.get(name)!r}")
        if len(a.get("options", [])) != len(b.get("options", [])):
            _fail(f"{where}, {a['id']}", "the number of options differs")
        if ("unit" in a) != ("unit" in b) or ("chat" in a) != ("chat" in b):
            _fail(f"{where}, {a['id']}", "`unit` or `chat` is given in one language only")


# ---- computed keys ------------------------------------------------------------------------------------------
def keys_module(chapter: int):
    """NN.keys.py as a module, or None when the chapter computes nothing."""
    file = QUIZZES / f"{chapter:02d}.keys.py"
    if not file.is_file():
        return None
    spec = importlib.util.spec_from_file_location(f"teachllm_quiz_keys_{chapter:02d}", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compute_keys(chapter: int, lm) -> dict[str, dict]:
    """Run the chapter's key functions on `lm`: {question id: {"answer": ..., "options": [...], fields...}}."""
    questions = read(chapter, "en")
    computed = [q for q in questions if "key" in q]
    module = keys_module(chapter)
    if computed and module is None:
        raise QuizError(f"chapter {chapter:02d}: {computed[0]['id']} has a key, but {chapter:02d}.keys.py is missing")
    keys = {}
    for q in computed:
        function = getattr(module, q["key"], None)
        if function is None:
            raise QuizError(f"{chapter:02d}.keys.py has no function {q['key']}(lm) for question {q['id']}")
        if not inspect.isfunction(function) or function.__module__ != module.__name__:
            raise QuizError(f"{chapter:02d}.keys.py: question {q['id']} needs a function {q['key']}(lm) defined "
                            f"there, but the name {q['key']} is {_describe(function)}: give the question another "
                            "id, or rename that name in the file (e.g. `import teachllm as tl` → `import teachllm`)")
        value = _plain(function(lm))
        if not isinstance(value, dict) or "answer" not in value:
            raise QuizError(f"{chapter:02d}.keys.py: {q['key']}(lm) must return a dict with 'answer', got {value!r}")
        keys[q["id"]] = value
    return keys


def _describe(value) -> str:
    """What a name in NN.keys.py that is not a key function is: "the module teachllm", "a str", ..."""
    if inspect.ismodule(value):
        return f"the module {value.__name__}"
    if inspect.isfunction(value) or inspect.isclass(value):
        return f"{value.__module__}.{value.__qualname__}, imported there"
    return f"a {type(value).__name__}"


def _plain(value):
    """JSON-ready: tuples to lists, numpy and torch scalars to Python numbers."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()
    return value


def next_token(lm, prompt: str | None = None, chat: str | None = None, n_options: int = 4) -> dict:
    """The key of a next-token question: greedy's next token after `prompt` (or after the user message `chat`
    in the chat template) and the next most likely ones, as options in token-id order (so greedy's place varies).
    Returns {"answer": greedy's index, "options": ["' Rome'", ...], "token": greedy's text, "token_id": its id,
    "probability": its probability}."""
    import torch

    text = prompt if chat is None else lm.tokenizer.apply_chat_template([{"role": "user", "content": chat}])
    ids = lm.tokenizer.encode(text)
    logits = lm.prefill(ids, lm.new_cache(max_len=len(ids)))[0].float()  # [V]
    probs = torch.softmax(logits, dim=-1)
    top = torch.topk(probs, n_options).indices.tolist()  # top[0] is greedy's token
    order = sorted(top)
    texts = [repr(lm.tokenizer.token_text(t)) for t in order]
    return {"answer": order.index(top[0]), "options": texts, "token": texts[order.index(top[0])],
            "token_id": top[0], "probability": round(float(probs[top[0]]), 3)}


def read_keys(file: Path = KEYS_JSON) -> dict:
    """keys.json: {"NN": {question id: {"answer": ..., fields...}}}."""
    if not file.is_file():
        raise QuizError(f"{file} is missing: run `python -m teachllm.course.quiz build`")
    try:
        keys = json.loads(_utf8_text(file))
    except json.JSONDecodeError as e:
        raise QuizError(f"{file}: not valid JSON ({e}); perhaps it was cut short: rebuild it with "
                        "`python -m teachllm.course.quiz build`, or restore it from git") from None
    if not isinstance(keys, dict) or not all(isinstance(v, dict) for v in keys.values()):
        raise QuizError(f"{file}: must map each chapter (\"01\", ...) to its computed answers: rebuild it with "
                        "`python -m teachllm.course.quiz build`")
    return keys


# ---- the final form ----------------------------------------------------------------------------------------
def load(chapter: int, lang: str = "en", keys: dict | None = None) -> list[Question]:
    """Chapter `chapter`'s questions in `lang`, final: computed options and answers from `keys` (keys.json's
    entries for this chapter; read from keys.json when None), explanations filled in. Checks both languages."""
    questions = read(chapter, lang)
    compare_languages(chapter, read(chapter, "en"), read(chapter, "zh"))
    if keys is None:
        keys = read_keys().get(f"{chapter:02d}", {}) if any("key" in q for q in questions) else {}
    return [shuffled(final(q, keys, f"{path(chapter, lang).name}, {q['id']}"), chapter) for q in questions]


def shuffled(q: Question, chapter: int) -> Question:
    """`q` with its options in an order drawn from its chapter and id alone: the same in both editions and on
    every build, and the right answer's position says nothing (the YAML files put it first more often than not)."""
    if q.type == "numeric":
        return q
    seed = int.from_bytes(hashlib.sha256(f"quiz {chapter:02d} {q.id}".encode()).digest()[:8], "big")
    order = list(range(len(q.options)))
    random.Random(seed).shuffle(order)  # order[k]: the YAML position of the option shown k-th
    return dataclasses.replace(q, options=[q.options[k] for k in order], answer=order.index(q.answer))


def final(q: dict, keys: dict, where: str) -> Question:
    """One question with its computed key filled in."""
    entry = keys.get(q["id"]) if "key" in q else {}
    if entry is None:
        _fail(where, "no computed key for it (in keys.json: run `python -m teachllm.course.quiz build`)")
    answer = entry.get("answer", q.get("answer"))
    options = entry.get("options", q.get("options", []))
    if q["type"] != "numeric":
        low, high = N_OPTIONS
        if not low <= len(options) <= high:
            _fail(where, f"needs {low} to {high} options, has {len(options)}")
        _check_index(answer, len(options), where)
    else:
        _check_number(answer, "a numeric answer", where)
    explanation = q["explanation"]
    if "key" in q:
        missing = sorted(template_fields(explanation, where) - entry.keys())
        if missing:
            _fail(where, f"the explanation names {', '.join(missing)}, which the key does not return "
                  f"(it returns {', '.join(sorted(entry))})")
        try:
            explanation = explanation.format(**entry)
        except (ValueError, TypeError, LookupError, AttributeError) as e:
            _fail(where, f"the explanation cannot be filled in with the key's fields ({type(e).__name__}: {e}): "
                  "name each field plainly, as {answer} or {answer:,}; write a literal brace twice, {{ or }}")
    return Question(id=q["id"], type=q["type"], question=q["question"], explanation=explanation, answer=answer,
                    options=list(options), tolerance=q.get("tolerance"), unit=q.get("unit", ""),
                    prompt=q.get("prompt"), chat=q.get("chat"), from_guide=q.get("from_guide", False))


def inline_html(text: str) -> str:
    """Inline Markdown as HTML: `code`, **bold**, *italic* and $math$ (as \\(…\\) in a span MathJax typesets);
    everything else escaped."""
    parts = re.split(r"(`[^`]+`|\$[^$]+\$)", text)
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(f"<code>{html.escape(part[1:-1])}</code>")
        elif part.startswith("$") and part.endswith("$") and len(part) > 1:
            out.append(f'<span class="math notranslate nohighlight">\\({html.escape(part[1:-1])}\\)</span>')
        else:
            part = html.escape(part, quote=False)
            part = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", part)
            # ASCII word characters only around the asterisks: Chinese puts *emphasis* between two characters
            out.append(re.sub(r"(?<![A-Za-z0-9_*])\*(?!\s)(.+?)(?<!\s)\*(?![A-Za-z0-9_*])", r"<em>\1</em>", part))
    return "".join(out)


# ---- build and check -----------------------------------------------------------------------------------------
def chapters() -> list[int]:
    """The chapters that have a quiz (an NN.en.yaml)."""
    return [n for n in CHAPTERS if path(n, "en").is_file()]


def compute_all(numbers: list[int], lm=None) -> dict:
    """The computed keys of chapters `numbers`, as keys.json holds them: {"NN": {question id: {...}}}."""
    from tqdm.auto import tqdm

    if lm is None:
        import teachllm

        lm = teachllm.load(device="cpu", dtype="float32")
    return {f"{n:02d}": compute_keys(n, lm) for n in tqdm(numbers, desc="quiz keys", unit="chapter")}


def differences(expected, actual, where: str = "keys.json") -> list[str]:
    """Where `actual` differs from `expected`: floats within KEYS_TOLERANCE (relative), the rest exactly."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = [f"{where}.{k}: only in {'keys.json' if k in expected else 'the new computation'}"
               for k in sorted(expected.keys() ^ actual.keys())]
        for k in sorted(expected.keys() & actual.keys()):
            out += differences(expected[k], actual[k], f"{where}.{k}")
        return out
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [d for i, (a, b) in enumerate(zip(expected, actual, strict=True))
                for d in differences(a, b, f"{where}[{i}]")]
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (expected, actual))
    numbers = numbers and not (isinstance(expected, int) and isinstance(actual, int))  # ids and counts: exactly
    if numbers and math.isclose(expected, actual, rel_tol=KEYS_TOLERANCE, abs_tol=1e-12):
        return []
    return [] if expected == actual else [f"{where}: keys.json has {expected!r}, the engine gives {actual!r}"]


def validate_all(keys: dict) -> None:
    """The quizzes of the chapters in `keys` ({"NN": ...}), both languages, final with those keys: raises
    QuizError at the first problem."""
    for nn, chapter_keys in keys.items():
        for lang in LANGUAGES:
            load(int(nn), lang, chapter_keys)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m teachllm.course.quiz", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("build", "check"),
                        help="build: write notebooks/quizzes/keys.json; check: compare it with a fresh computation")
    parser.add_argument("chapters", nargs="*", type=int,
                        help="only these chapters (build: the others' entries in keys.json stay as they are)")
    args = parser.parse_args(argv)
    numbers = args.chapters or chapters()
    try:
        keys = compute_all(numbers)
        validate_all(keys)
        if args.command == "build":
            merged = {**(read_keys() if args.chapters and KEYS_JSON.is_file() else {}), **keys}
            KEYS_JSON.write_text(json.dumps(merged, indent=1, ensure_ascii=False, sort_keys=True) + "\n",
                                 encoding="utf-8")
            print(f"wrote {KEYS_JSON}: {sum(map(len, keys.values()))} computed answers in chapters "
                  f"{', '.join(keys)}")
            return 0
        committed = read_keys()
        found = differences({nn: committed.get(nn, {}) for nn in keys}, keys)
        if not args.chapters:
            found += [f"keys.json.{nn}: a chapter with no quiz" for nn in sorted(committed.keys() - keys.keys())]
    except QuizError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for line in found:
        print(line, file=sys.stderr)
    if found:
        print(f"{len(found)} difference(s): run `python -m teachllm.course.quiz build` if the engine's answers are "
              "right", file=sys.stderr)
        return 1
    print(f"keys.json matches the engine (chapters {', '.join(keys)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
