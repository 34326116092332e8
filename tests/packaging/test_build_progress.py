"""A long build's one line of progress (packaging/build_progress.py): ninja's steps, the time left, and
the whole output kept in the log."""

from __future__ import annotations

import io
import sys

import bootstrap  # noqa: F401 - puts packaging/ on sys.path
import build_progress


def test_ninja_status_lines_are_read_as_steps():
    assert build_progress.step_of("[137/412] Building CUDA object ggml/src/ggml-cuda/mmq.cu.o") == (137, 412)
    assert build_progress.step_of("  [1/9] Linking CXX shared library bin/libllama.so") == (1, 9)
    assert build_progress.step_of("-- Configuring done") is None


def test_time_left_comes_from_the_pace_once_there_is_one():
    assert build_progress.minutes_left(0, 0, 60, estimate_min=12) == 11  # the plan's estimate, less time spent
    assert build_progress.minutes_left(100, 400, 600, estimate_min=12) == 30  # 10 min for 100 steps: 30 for 300
    assert build_progress.minutes_left(1, 400, 600, estimate_min=12) == 2  # too few steps to judge


def test_the_build_output_goes_to_the_log_and_progress_to_the_user(tmp_path):
    script = "\n".join(f"print('[{i}/20] Building object {i}')" for i in range(1, 21)) + "\nprint('done')"
    out = io.StringIO()
    code, output = build_progress.run_with_progress([sys.executable, "-c", script], {}, tmp_path / "log.txt",
                                                    "llama.cpp (cuda)", estimate_min=5, out=out)
    assert code == 0 and output.endswith("done\n")
    assert (tmp_path / "log.txt").read_text() == output
    shown = out.getvalue().splitlines()
    assert shown[0] == f"building llama.cpp (cuda): about 5 min; every line of it in {tmp_path / 'log.txt'}"
    assert shown[1].startswith("building llama.cpp (cuda): 1/20 steps")
    assert "building llama.cpp (cuda): 20/20 steps" in shown[-2]
    assert len(shown) == 13, "where the log is, a line at the first step and every tenth of the way, the result"
    assert shown[-1].startswith("llama.cpp (cuda): built in ")


def test_a_failed_build_returns_its_code_and_output(tmp_path):
    out = io.StringIO()
    code, output = build_progress.run_with_progress(
        [sys.executable, "-c", "import sys; print('CMake Error: no CUDA'); sys.exit(3)"], {}, tmp_path / "log",
        "llama.cpp (cuda)", estimate_min=5, out=out)
    assert code == 3 and "CMake Error: no CUDA" in output
    assert out.getvalue().strip().splitlines()[-1].startswith("llama.cpp (cuda): failed in")
