"""Asking once before quitting cuts off replies that are still being written.

Quitting mid-reply keeps what was said (stored "interrupted"), but the user may not have noticed a
reply still running in another conversation; one question, with a way to stop asking, is enough.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtWidgets import QCheckBox, QMessageBox, QWidget


def quit_question(replies: int) -> str:
    """ "2 replies are still being written — quit anyway?" (singular for one)."""
    if replies == 1:
        return "A reply is still being written — quit anyway?"
    return f"{replies} replies are still being written — quit anyway?"


def kept_note(replies: int) -> str:
    """The line under the question, in the same number."""
    return f"What {'it' if replies == 1 else 'they'} said so far is kept, marked as interrupted."


def ask_quit(parent: Optional[QWidget], replies: int) -> tuple[bool, bool]:
    """Ask; returns (quit, stop asking from now on)."""
    box = QMessageBox(QMessageBox.Icon.Question, "Quit Confab?", quit_question(replies),
                      QMessageBox.StandardButton.Cancel, parent)
    box.setInformativeText(kept_note(replies))
    quit_button = box.addButton("Quit", QMessageBox.ButtonRole.AcceptRole)
    quit_button.setAccessibleName("Quit anyway")
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    never = QCheckBox("Don't ask again")
    never.setAccessibleName("Don't ask again before quitting")
    box.setCheckBox(never)
    box.exec()
    return box.clickedButton() is quit_button, never.isChecked()
