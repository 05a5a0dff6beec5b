"""The chapters' quizzes (teachllm.course.quiz, notebooks/quizzes/) and their widget (teachllm.viz.Quiz).

- Every chapter's quiz loads in both languages: 5–10 questions, the same ids, types, options and typed-in
  answers in English and Chinese, every computed answer present in keys.json, every explanation filled in.
- keys.json is what the engine computes now, on the bundled model (`python -m teachllm.course.quiz check` too).
- The widget checks answers as Question.is_right does, and its kernel-free form (what the book's page checks
  answers with) carries the loader's questions, answers and explanations.
- Bad quiz files give errors that name the file, the question and what is wrong.
- Every chapter notebook shows its chapter's current quiz: a change to a YAML file that was not drawn again into
  the notebooks (`scripts/build_notebooks.py --quizzes-only NN`) would leave the book showing the old questions.
"""

import json
import sys
from pathlib import Path

import pytest
import yaml

from teachllm.course import quiz
from teachllm.viz import Quiz, set_language
from teachllm.viz.language import language

CHAPTERS = list(quiz.CHAPTERS)
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def in_language():
    """set_language for one test; the language before it comes back afterwards."""
    before = language()
    yield set_language
    set_language(before)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_has_a_quiz_in_both_languages(chapter):
    keys = quiz.read_keys()
    en, zh = (quiz.load(chapter, lang) for lang in quiz.LANGUAGES)
    assert 5 <= len(en) <= 10
    assert [q.id for q in en] == [q.id for q in zh]
    for a, b in zip(en, zh, strict=True):
        assert (a.type, a.answer, len(a.options), a.tolerance) == (b.type, b.answer, len(b.options), b.tolerance)
        assert a.question != b.question and a.explanation != b.explanation, f"{a.id}: not translated"
        assert "{" not in a.explanation.replace("{{", "") or "$" in a.explanation, f"{a.id}: a field not filled in"
    computed = [q["id"] for q in quiz.read(chapter, "en") if "key" in q]
    assert set(keys.get(f"{chapter:02d}", {})) == set(computed)


def test_every_guide_question_is_a_quiz_item():
    """The lecturer's guide's "Ask the room" questions: each chapter has at least one item from it."""
    for chapter in CHAPTERS:
        assert any(q.from_guide for q in quiz.load(chapter, "en")), f"chapter {chapter}: no from_guide question"


@pytest.mark.floating
def test_keys_json_is_what_the_engine_computes(lm32):
    """Recompute every key on the bundled model, as `python -m teachllm.course.quiz build` does: on the CPU in float32,
    whatever device the other tests use. Token ids and counts exactly, probabilities within 1e-6."""
    fresh = quiz.compute_all(quiz.chapters(), lm32)
    assert quiz.differences(quiz.read_keys(), fresh) == []


def test_an_answer_is_right_within_its_tolerance():
    numeric = quiz.Question(id="x", type="numeric", question="?", explanation="", answer=1000, tolerance=0)
    assert numeric.is_right(1000) and numeric.is_right("1000") and not numeric.is_right(1001)
    relative = quiz.Question(id="x", type="numeric", question="?", explanation="", answer=56_623_104)
    assert relative.is_right(56_623_104 * (1 + 5e-7)) and not relative.is_right(56_623_104 * (1 + 2e-6))
    choice = quiz.Question(id="x", type="choice", question="?", explanation="", answer=2, options=["a", "b", "c"])
    assert choice.is_right(2) and not choice.is_right(1) and not choice.is_right(None)


def test_the_widget_checks_answers_and_shows_the_explanation(in_language):
    in_language("en")
    view = Quiz(1)
    numeric = next(v for v in view.views if v.q.type == "numeric")
    assert numeric.explanation.layout.display == "none"
    assert numeric.check() is None and "number" in numeric.result.value  # nothing entered yet
    numeric.input.value = str(numeric.q.answer + 1)
    assert numeric.check() is False and "✗" in numeric.result.value
    assert numeric.explanation.layout.display is None
    numeric.input.value = f"{numeric.q.answer:,}"
    assert numeric.check() is True and "✓" in numeric.result.value
    choice = next(v for v in view.views if v.q.type == "choice")
    choice.input.value = (choice.q.answer + 1) % len(choice.q.options)
    assert choice.check() is False
    in_language("zh")
    assert "检查答案" == Quiz(1).views[0].button.description


@pytest.mark.parametrize("lang", quiz.LANGUAGES)
def test_the_static_form_carries_the_loaders_questions(lang, in_language):
    in_language(lang)
    for chapter in CHAPTERS:
        form = json.loads(json.dumps(Quiz(chapter).static_form()))  # what the page receives
        assert (form["widget"], form["lang"], form["chapter"]) == ("Quiz", lang, chapter)
        questions = quiz.load(chapter, lang)
        assert [q["id"] for q in form["questions"]] == [q.id for q in questions]
        for page, q in zip(form["questions"], questions, strict=True):
            assert (page["type"], page["answer"], page["tolerance"]) == (q.type, q.answer, q.tolerance)
            assert page["explanation"] == quiz.inline_html(q.explanation)
            assert len(page["options"]) == len(q.options)
        assert set(form["strings"]) >= {"Check", "✓ Right.", "✗ Not right. The answer: {answer}"}


def test_inline_markdown():
    assert quiz.inline_html("a `<b>` **c** *d* $x \\le y$") == (
        'a <code>&lt;b&gt;</code> <strong>c</strong> <em>d</em> <span class="math notranslate nohighlight">'
        "\\(x \\le y\\)</span>")
    # emphasis between two Chinese characters is emphasis; an asterisk inside an ASCII word is not
    assert quiz.inline_html("保留*哪些* token") == "保留<em>哪些</em> token"
    assert quiz.inline_html("a*b*c and 2*3*4") == "a*b*c and 2*3*4"


# ---- bad input ----------------------------------------------------------------------------------------------
GOOD = {"id": "two-plus-two", "type": "numeric", "question": "2 + 2?", "answer": 4, "explanation": "Four."}
CHOICE = {"id": "pick", "type": "choice", "question": "Which?", "options": ["a", "b", "c"], "answer": 1,
          "explanation": "b."}


@pytest.mark.parametrize(("change", "message"), [
    ({"question": None}, "missing field `question`"),
    ({"explanation": ""}, "missing field `explanation`"),
    ({"type": "essay"}, "unknown type 'essay'"),
    ({"answer": None}, "missing field `answer` (or `key`"),
    ({"answer": "four"}, "a numeric answer must be a number"),
    ({"id": "Two_Plus"}, "must be kebab-case"),
    ({"answers": 4}, "unknown field(s) answers"),
    ({"key": "two_plus_two"}, "has both `key` and `answer`"),
    ({"key": "other"}, "must name the function of its id"),
    ({"prompt": "The sky is"}, "for next-token questions only"),
])
def test_a_bad_question_says_what_is_wrong(change, message):
    q = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    with pytest.raises(quiz.QuizError, match=message.replace("(", r"\(").replace(")", r"\)")):
        quiz.validate(q, "NN.en.yaml, question 1")


@pytest.mark.parametrize(("change", "message"), [
    ({"answer": 3}, r"answer 3 is not an option's index \(0 to 2\)"),
    ({"answer": True}, "answer True is not an option's index"),
    ({"options": ["a", "b"], "answer": 0}, "a list of 3 to 5"),
    # the options are shown shuffled (quiz.shuffled), so a position in the explanation points at another option
    ({"explanation": "The ratio in the third option is WordPiece's rule."}, "names an option by its position"),
    ({"explanation": "It is the opposite of the last option."}, "names an option by its position"),
    ({"explanation": "第三个选项中的比值是 WordPiece 的规则。"}, "names an option by its position"),
    ({"explanation": "与最后一个选项恰恰相反。"}, "names an option by its position"),
])
def test_a_bad_choice_says_what_is_wrong(change, message):
    with pytest.raises(quiz.QuizError, match=message):
        quiz.validate({**CHOICE, **change}, "NN.en.yaml, question 1")


def write_quiz(folder, lang, questions, chapter=1):
    (folder / f"{chapter:02d}.{lang}.yaml").write_text(yaml.safe_dump({"chapter": chapter, "questions": questions},
                                                                       allow_unicode=True), encoding="utf-8")


@pytest.fixture
def quizzes(tmp_path, monkeypatch):
    monkeypatch.setattr(quiz, "QUIZZES", tmp_path)
    return tmp_path


def five(q):
    return [{**q, "id": f"{q['id']}-{i}"} for i in range(5)]


def test_the_languages_must_agree(quizzes):
    write_quiz(quizzes, "en", five(CHOICE))
    write_quiz(quizzes, "zh", five({**CHOICE, "answer": 2}))
    with pytest.raises(quiz.QuizError, match=r"01.en.yaml / 01.zh.yaml, pick-0: `answer` differs: 1 / 2"):
        quiz.load(1, "en")
    write_quiz(quizzes, "zh", [{**q, "id": q["id"].replace("pick", "choose")} for q in five(CHOICE)])
    with pytest.raises(quiz.QuizError, match="the ids differ"):
        quiz.load(1, "en")
    write_quiz(quizzes, "zh", [*five(CHOICE)[:4], {**five(CHOICE)[4], "type": "numeric", "answer": 1,
                                                   "options": None}])
    with pytest.raises(quiz.QuizError, match="`type` differs"):
        quiz.load(1, "zh")


def test_a_chapter_needs_five_to_ten_questions_and_unique_ids(quizzes):
    write_quiz(quizzes, "en", five(CHOICE)[:4])
    with pytest.raises(quiz.QuizError, match="a list of 5 to 10 questions"):
        quiz.read(1, "en")
    write_quiz(quizzes, "en", [CHOICE] * 5)
    with pytest.raises(quiz.QuizError, match="the id 'pick' is used twice"):
        quiz.read(1, "en")
    write_quiz(quizzes, "en", five(CHOICE), chapter=2)
    (quizzes / "02.en.yaml").rename(quizzes / "03.en.yaml")
    with pytest.raises(quiz.QuizError, match="says chapter 2, its name says 3"):
        quiz.read(3, "en")


def test_a_computed_key_must_exist_and_give_the_explanations_fields(quizzes, lm):
    computed = {"id": "n-tokens", "type": "numeric", "question": "How many?", "key": "n_tokens",
                "explanation": "{answer} tokens, {n_bytes} bytes."}
    for lang in quiz.LANGUAGES:
        write_quiz(quizzes, lang, [computed, *five(GOOD)[:4]])
    with pytest.raises(quiz.QuizError, match="01.keys.py is missing"):
        quiz.compute_keys(1, lm)
    (quizzes / "01.keys.py").write_text("def other(lm):\n    return {'answer': 1}\n")
    with pytest.raises(quiz.QuizError, match=r"no function n_tokens\(lm\) for question n-tokens"):
        quiz.compute_keys(1, lm)
    (quizzes / "01.keys.py").write_text("def n_tokens(lm):\n    return {'answer': len(lm.tokenizer.encode('Hi'))}\n")
    keys = quiz.compute_keys(1, lm)
    with pytest.raises(quiz.QuizError, match="the explanation names n_bytes, which the key does not return"):
        quiz.load(1, "en", keys)
    with pytest.raises(quiz.QuizError, match="no computed key for it"):
        quiz.load(1, "en", {})


def test_check_reports_a_changed_number_and_tolerates_rounding():
    committed = {"03": {"lm-head-flops": {"answer": 56623104, "probability": 0.653}}}
    rounded = {"03": {"lm-head-flops": {"answer": 56623104, "probability": 0.6530000001}}}
    assert quiz.differences(committed, rounded) == []
    found = quiz.differences(committed, {"03": {"lm-head-flops": {"answer": 56623105, "probability": 0.653}}})
    assert found == ["keys.json.03.lm-head-flops.answer: keys.json has 56623104, the engine gives 56623105"]


@pytest.mark.parametrize("lang", quiz.LANGUAGES)
def test_the_notebooks_show_the_current_quizzes(lang):
    """The saved kernel-free form of every quiz cell (what the book shows) is what the YAML and keys.json give now."""
    import nbformat

    sys.path.insert(0, str(ROOT / "scripts"))
    import build_notebooks

    folder = build_notebooks.folder(lang)
    stale, seen = [], 0
    for path in sorted(folder.glob("[0-9][0-9]-*.ipynb")):
        for cell, data in build_notebooks.quiz_outputs(nbformat.read(path, as_version=4), lang):
            seen += 1
            key = build_notebooks.MIME_KEY
            shown = [json.loads(o.data[key]) for o in cell.outputs if key in o.get("data", {})]
            if shown != [json.loads(data[key])]:
                stale.append(path.name)
    assert seen == len(CHAPTERS), f"{seen} quiz cells in {folder}, for {len(CHAPTERS)} chapters"
    assert not stale, f"{lang}: {stale} show an old quiz; run scripts/build_notebooks.py --quizzes-only"


def answer_skew(questions) -> float:
    """Pearson's chi-square of where the right answers sit (A, B, C, ...) against what uniformly placed answers
    give: a question with n options puts its answer at each of its n positions with probability 1/n."""
    observed, expected = {}, {}
    for q in questions:
        observed[q.answer] = observed.get(q.answer, 0) + 1
        for k in range(len(q.options)):
            expected[k] = expected.get(k, 0) + 1 / len(q.options)
    return sum((observed.get(k, 0) - e) ** 2 / e for k, e in expected.items())


# chi-square with 4 degrees of freedom (five positions at most) exceeds 18.47 with probability 0.001 alone
SKEWED = 18.47


def test_the_answer_position_says_nothing():
    """Options are shuffled per question id, the same in both editions; over all chapters the answers sit where
    chance would put them. The YAML's own order (the answer first more often than not) fails the same check."""
    keys = quiz.read_keys()
    shown, written = [], []
    for chapter in CHAPTERS:
        en, zh = (quiz.load(chapter, lang) for lang in quiz.LANGUAGES)
        chapter_keys = keys.get(f"{chapter:02d}", {})
        for q, z, raw in zip(en, zh, quiz.read(chapter, "en"), strict=True):
            if q.type == "numeric":
                continue
            unshuffled = quiz.final(raw, chapter_keys, "test")
            assert sorted(q.options) == sorted(unshuffled.options), q.id  # the same options ...
            assert q.options[q.answer] == unshuffled.options[unshuffled.answer], q.id  # ... and the same answer
            assert z.answer == q.answer, q.id  # the same position in both editions
            shown.append(q)
            written.append(unshuffled)
    assert len(shown) >= 50
    assert answer_skew(written) > SKEWED, "the YAML's order is not skewed: this check could not fail"
    assert answer_skew(shown) < SKEWED, [q.answer for q in shown]
