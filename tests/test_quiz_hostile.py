"""Hostile quiz files (issue 38): each is refused with an error that names the file (and the question) and says the
fix, or handled correctly; none slips through, none ends in a raw Python error. No model is loaded."""

import re

import pytest
import yaml

from teachllm.course import quiz

NUMERIC = {"id": "two-plus-two", "type": "numeric", "question": "2 + 2?", "answer": 4, "tolerance": 0.5,
           "explanation": "Four."}
CHOICE = {"id": "pick", "type": "choice", "question": "Which?", "options": ["a", "b", "c"], "answer": 1,
          "explanation": "b."}
COMPUTED = {"id": "n-tokens", "type": "numeric", "question": "How many?", "key": "n_tokens",
            "explanation": "{answer} tokens."}


@pytest.fixture
def quizzes(tmp_path, monkeypatch):
    monkeypatch.setattr(quiz, "QUIZZES", tmp_path)
    return tmp_path


def five(q):
    return [{**q, "id": f"{q['id']}-{i}"} for i in range(5)]


def yaml_text(questions, chapter=1):
    return yaml.safe_dump({"chapter": chapter, "questions": questions}, allow_unicode=True, sort_keys=False)


def write_both(folder, questions):
    for lang in quiz.LANGUAGES:
        (folder / f"01.{lang}.yaml").write_text(yaml_text(questions), encoding="utf-8")


def test_a_duplicate_yaml_key_is_refused(quizzes):
    write_both(quizzes, five(CHOICE))
    first = quiz.load(1, "en")[0]
    assert first.options[first.answer] == CHOICE["options"][1]  # the YAML's answer 1, wherever the shuffle puts it
    text = yaml_text(five(CHOICE))
    twice = text.replace("  answer: 1\n", "  answer: 1\n  answer: 2\n", 1)  # PyYAML alone keeps the 2
    for lang in quiz.LANGUAGES:
        (quizzes / f"01.{lang}.yaml").write_text(twice, encoding="utf-8")
    line = twice.splitlines().index("  answer: 2") + 1
    with pytest.raises(quiz.QuizError, match=rf"01\.en\.yaml, line {line}: the key 'answer' is given twice.*delete"):
        quiz.load(1, "en")
    (quizzes / "01.en.yaml").write_text("chapter: 1\n" + text, encoding="utf-8")
    with pytest.raises(quiz.QuizError, match=r"01\.en\.yaml, line 2: the key 'chapter' is given twice"):
        quiz.read(1, "en")


@pytest.mark.parametrize("tolerance", [float("inf"), float("nan")])
def test_a_tolerance_must_be_finite(quizzes, tolerance):
    write_both(quizzes, five({**NUMERIC, "tolerance": tolerance}))
    with pytest.raises(quiz.QuizError, match=rf"01\.en\.yaml, question 1 \(two-plus-two-0\): tolerance must be a "
                                             rf"finite number ≥ 0, got {tolerance}.*e\.g\. 0\.5"):
        quiz.load(1, "en")


@pytest.mark.parametrize("answer", [float("nan"), float("inf")])
def test_a_numeric_answer_must_be_a_finite_number(quizzes, answer):
    """Typed in (the same NaN in both languages is not a translation mismatch) or from keys.json."""
    write_both(quizzes, five({**NUMERIC, "answer": answer}))
    with pytest.raises(quiz.QuizError, match=rf"01\.en\.yaml, question 1 \(two-plus-two-0\): a numeric answer must "
                                             rf"be (a number|finite), got {answer}"):
        quiz.load(1, "en")
    write_both(quizzes, [COMPUTED, *five(NUMERIC)[:4]])
    assert quiz.load(1, "en", {"n-tokens": {"answer": 3}})[0].answer == 3
    with pytest.raises(quiz.QuizError, match=rf"01\.en\.yaml, n-tokens: a numeric answer must be (a number|finite), "
                                             rf"got {answer}"):
        quiz.load(1, "en", {"n-tokens": {"answer": answer}})


def test_a_quiz_file_that_is_not_utf8_says_so(quizzes):
    write_both(quizzes, five(CHOICE))
    zh = five({**CHOICE, "question": "哪一个？", "explanation": "选 b。"})
    (quizzes / "01.zh.yaml").write_bytes(yaml_text(zh).encode("gb18030"))
    with pytest.raises(quiz.QuizError, match=r"01\.zh\.yaml: not UTF-8 text.*save it as UTF-8"):
        quiz.load(1, "zh")


@pytest.mark.parametrize("explanation", ["{answer} tokens in the set {1, 2", "{answer} tokens {", "{answer} } tokens",
                                         "{answer:xyz} tokens"])
def test_a_lone_brace_in_a_computed_explanation_is_refused(quizzes, explanation):
    write_both(quizzes, [{**COMPUTED, "explanation": explanation}, *five(NUMERIC)[:4]])
    with pytest.raises(quiz.QuizError, match=r"01\.en\.yaml, (question 1 \()?n-tokens\)?: the explanation .*"
                                             r"write a literal brace twice, \{\{ or \}\}"):
        quiz.load(1, "en", {"n-tokens": {"answer": 3}})


def test_braces_are_shown_as_the_convention_says(quizzes):
    """A typed-in explanation is shown as written; a computed one fills in its fields and halves doubled braces."""
    write_both(quizzes, [{**COMPUTED, "explanation": "{answer} tokens in the set {{1, 2}}"},
                         {**five(NUMERIC)[0], "explanation": "The set {1, 2"}, *five(NUMERIC)[1:4]])
    computed, typed = quiz.load(1, "en", {"n-tokens": {"answer": 3}})[:2]
    assert (computed.explanation, typed.explanation) == ("3 tokens in the set {1, 2}", "The set {1, 2")


@pytest.mark.parametrize(("keys_py", "question_id", "what"), [
    ("import teachllm as tl\n", "tl", "the module teachllm"),
    ("from teachllm.course.quiz import next_token\n", "next-token", "teachllm.course.quiz.next_token, imported"),
    ("prompt = 'The sky is'\n", "prompt", "a str"),
])
def test_a_question_id_that_names_something_else_in_the_keys_file(quizzes, keys_py, question_id, what):
    name = quiz.function_name(question_id)
    write_both(quizzes, [{**COMPUTED, "id": question_id, "key": name}, *five(NUMERIC)[:4]])
    (quizzes / "01.keys.py").write_text(keys_py, encoding="utf-8")
    with pytest.raises(quiz.QuizError, match=rf"01\.keys\.py: question {question_id} needs a function {name}\(lm\) "
                                             rf"defined there, but the name {name} is {re.escape(what)}.*another id"):
        quiz.compute_keys(1, lm=None)
    (quizzes / "01.keys.py").write_text(f"def {name}(lm):\n    return {{'answer': 3}}\n", encoding="utf-8")
    assert quiz.compute_keys(1, lm=None) == {question_id: {"answer": 3}}


def test_a_broken_keys_json_says_how_to_rebuild_it(tmp_path):
    file = tmp_path / "keys.json"
    text = quiz.KEYS_JSON.read_text(encoding="utf-8")
    file.write_text(text[: len(text) // 2], encoding="utf-8")  # cut short, as by an interrupted copy
    with pytest.raises(quiz.QuizError, match=rf"{re.escape(str(file))}: not valid JSON \(.*line \d+ column \d+.*\)"
                                             r".*python -m teachllm\.course\.quiz build"):
        quiz.read_keys(file)
    file.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(quiz.QuizError, match=r"keys\.json: must map each chapter .*quiz build"):
        quiz.read_keys(file)
