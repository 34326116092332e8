"""Models whose state cannot be merged by left padding (sliding windows) step one session a forward.

Their answers stay those of a session alone; only the batching speedup is lost for that model.
"""

from __future__ import annotations

from tests.engine.test_batching import alone, watched_with_others


def test_sliding_window_model_falls_back_to_per_session_steps(make_engine, tiny_sliding_models, backend):
    engine = make_engine(tiny_sliding_models[backend], backend)
    state_kinds = engine._call(lambda w: _state_kinds(w))
    assert any("Sliding" in k or "Rotating" in k for k in state_kinds), state_kinds  # the window is real
    solo = alone(engine, 40)  # longer than the 8-token window
    for n_others in (1, 3):
        got, rows = watched_with_others(engine, n_others, 40)
        assert got == solo, n_others
        assert rows == [], "a sliding-window state was merged into a batch"


def _state_kinds(worker) -> set[str]:
    state = worker.backend.new_state()
    with worker.backend.compute():
        worker.backend.forward(state, [5, 6, 7])
    layers = getattr(state, "layers", state)
    return {type(layer).__name__ for layer in layers}
