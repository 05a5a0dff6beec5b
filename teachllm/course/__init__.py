"""The course's tooling: what the chapters use to check a reader's work, and what a lecturer runs.

Not the lesson. The chapters import it at their exercises and quizzes:

    grading.py    the check cells: `grading.checker()` runs an exercise's tests (otter) and says what failed, in the
                  reader's language; scripts/grade.py grades a class's submissions with the same tests
    answers.py    what crosses the grader's sandbox (scripts/grade.py): a student's answers out, the tests' inputs
                  in, as plain data (JSON), never pickled objects
    quiz.py       each chapter's quiz: questions from notebooks/quizzes/, every answer that is a fact about the model
                  computed by the engine (`python -m teachllm.course.quiz build | check`); viz.Quiz shows them
"""
