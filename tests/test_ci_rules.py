"""Rules the test suite keeps for CI: under CI=true a skip is a failure (tests/conftest.py)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SKIPS = {
    "a test that skips": "import pytest\n\n\ndef test_one():\n    pytest.skip('chromium is missing')\n",
    "a module skipped at import": "import pytest\n\npytest.importorskip('no_such_package')\n\n\n"
                                  "def test_one():\n    pass\n",
}


def run_pytest(tmp_path, source: str, ci: str) -> subprocess.CompletedProcess:
    shutil.copy(TESTS / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_it.py").write_text(source)
    env = {**os.environ, "CI": ci, "PYTHONPATH": str(TESTS.parent)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("case", SKIPS)
def test_a_skip_fails_under_ci_and_stays_a_skip_elsewhere(tmp_path, case):
    run = run_pytest(tmp_path, SKIPS[case], "true")
    assert run.returncode != 0 and "skipped under CI=true" in run.stdout, run.stdout[-3000:]
    run = run_pytest(tmp_path, SKIPS[case], "")
    assert run.returncode in (0, 5) and "1 skipped" in run.stdout, run.stdout[-3000:]  # 5: no test ran


def test_an_expected_failure_stays_one_under_ci(tmp_path):
    run = run_pytest(tmp_path, "import pytest\n\n\n@pytest.mark.xfail(reason='known')\ndef test_one():\n"
                               "    assert False\n", "true")
    assert run.returncode == 0 and "1 xfailed" in run.stdout, run.stdout[-3000:]
