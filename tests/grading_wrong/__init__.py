"""Plausible wrong answers per exercise: tests/test_grading.py checks that the hidden tests catch each one."""
