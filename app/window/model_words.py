"""What the window says of the loaded model, as text: the backend part of the status bar (whole,
compact and its tooltip, with a failed kernel check, the draft model and the GPU placement said
there), and the page shown while no conversation is open, which names the model and, for the
bundled demo model, says where to get a better one. The window (main_window.py) sets them.

    label.setText(*backend_part("llamacpp", "cpu", "Q4_1", draft_model="smollm2-135m-instruct (…)"))
    view.set_empty_text(empty_text("<b>SmolLM2</b> is loaded and ready (llama.cpp on CPU).", demo=True))
"""

from __future__ import annotations

from app.window.status_parts import backend_compact, backend_text, backend_tip, short_model

EMPTY_TEXT = (
    "<h2>Welcome to Confab</h2>"
    "<p>Chat with a language model that runs on this computer. Nothing you type leaves it.</p>"
    "<p>{model}</p>"
    "{demo}"
    "<p style='color: gray'>Type below and press Enter. Ctrl+N starts another conversation; "
    "several can answer at the same time.</p>"
)


DEMO_NOTE = (
    "<p>The bundled model is a tiny demo: quick, but its answers are often wrong. "
    "<a href='get-models'>Get a better model…</a> (Model ▸ Get models…)</p>"
)


def empty_text(model: str, demo: bool) -> str:
    return EMPTY_TEXT.format(model=model, demo=DEMO_NOTE if demo else "")


def backend_part(backend: str, device: str, precision: str = "", kernel_warning: str = "", draft_model: str = "",
                 placement: str = "") -> tuple[str, str]:
    """The backend part's whole and compact texts. A failed kernel check (llama.cpp fell back to
    plain kernels) is said in both forms; the whole reason is in the tooltip's "Why", which the
    backend's reason carries."""
    warning = " · kernel check failed" if kernel_warning else ""
    drafting = f" · drafting with {short_model(draft_model.split(' (')[0])}" if draft_model else ""
    on = f" · {placement}" if placement else ""
    return (backend_text(backend, device, precision, placement) + warning + drafting,
            backend_compact(backend, device) + on + warning + (" · drafting" if draft_model else ""))


def backend_part_tip(backend: str, device: str, precision_reason: str = "", backend_reason: str = "",
                     draft_model: str = "", placement_reason: str = "") -> str:
    """The backend part's tooltip: `backend_tip`'s lines, then the GPU placement's reason and the draft model."""
    return (backend_tip(backend, device, precision_reason, backend_reason)
            + (f"\nGPU: {placement_reason}" if placement_reason else "")
            + (f"\nDraft model: {draft_model} guesses tokens for the model to check" if draft_model else ""))
