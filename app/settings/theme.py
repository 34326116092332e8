"""Light and dark looks: the Fusion style with a full palette, so every platform looks the same
(and check boxes with an outline that shows on the dark one).

Palettes set every role in every color group (Disabled included) so disabled text, placeholders,
selections, tooltips and links stay readable in both looks. "system" follows the desktop's color
scheme; connect `app.styleHints().colorSchemeChanged` to re-apply when it changes.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPalette, QPen
from PySide6.QtWidgets import QApplication, QProxyStyle, QStyle, QStyleFactory, QToolTip

R = QPalette.ColorRole
G = QPalette.ColorGroup

# role -> (active/inactive color, disabled color)
_DARK: dict[QPalette.ColorRole, tuple[str, str]] = {
    R.Window: ("#2d2e31", "#2d2e31"),
    R.WindowText: ("#e8eaed", "#80868b"),
    R.Base: ("#1c1d1f", "#27282b"),
    R.AlternateBase: ("#242528", "#2a2b2e"),
    R.Text: ("#e8eaed", "#80868b"),
    R.PlaceholderText: ("#9aa0a6", "#6b7075"),
    R.Button: ("#3a3c40", "#323336"),
    R.ButtonText: ("#e8eaed", "#80868b"),
    R.BrightText: ("#ff6b6b", "#ff6b6b"),
    R.Highlight: ("#3d6fb4", "#3a3d42"),
    R.HighlightedText: ("#ffffff", "#9aa0a6"),
    R.ToolTipBase: ("#3c4043", "#3c4043"),
    R.ToolTipText: ("#e8eaed", "#e8eaed"),
    R.Link: ("#8ab4f8", "#6b7f9e"),
    R.LinkVisited: ("#c58af9", "#8c74a3"),
    R.Light: ("#4a4d52", "#4a4d52"),
    R.Midlight: ("#3e4044", "#3e4044"),
    R.Mid: ("#26272a", "#26272a"),
    R.Dark: ("#111213", "#111213"),
    R.Shadow: ("#000000", "#000000"),
}

_LIGHT: dict[QPalette.ColorRole, tuple[str, str]] = {
    R.Window: ("#efefef", "#efefef"),
    R.WindowText: ("#1f1f1f", "#8a8a8a"),
    R.Base: ("#ffffff", "#f4f4f4"),
    R.AlternateBase: ("#f5f5f5", "#f0f0f0"),
    R.Text: ("#1f1f1f", "#8a8a8a"),
    R.PlaceholderText: ("#707070", "#a0a0a0"),
    R.Button: ("#e8e8e8", "#ececec"),
    R.ButtonText: ("#1f1f1f", "#8a8a8a"),
    R.BrightText: ("#c00000", "#c00000"),
    R.Highlight: ("#2a64c5", "#c8c8c8"),
    R.HighlightedText: ("#ffffff", "#5a5a5a"),
    R.ToolTipBase: ("#ffffe1", "#ffffe1"),
    R.ToolTipText: ("#1f1f1f", "#1f1f1f"),
    R.Link: ("#1a55c0", "#7d92b8"),
    R.LinkVisited: ("#6a33a8", "#9c86b5"),
    R.Light: ("#ffffff", "#ffffff"),
    R.Midlight: ("#e3e3e3", "#e3e3e3"),
    R.Mid: ("#b8b8b8", "#b8b8b8"),
    R.Dark: ("#9f9f9f", "#9f9f9f"),
    R.Shadow: ("#767676", "#767676"),
}


def palette(dark: bool) -> QPalette:
    """The full light or dark palette."""
    pal = QPalette()
    for role, (normal, disabled) in (_DARK if dark else _LIGHT).items():
        for group in (G.Active, G.Inactive):
            pal.setColor(group, role, QColor(normal))
        pal.setColor(G.Disabled, role, QColor(disabled))
    return pal


class ConfabStyle(QProxyStyle):
    """Fusion, with an outline an unchecked check box or radio button shows on a dark palette
    (Fusion draws it a shade off the dark background, too faint to see)."""

    INDICATORS = (QStyle.PrimitiveElement.PE_IndicatorCheckBox, QStyle.PrimitiveElement.PE_IndicatorRadioButton)

    def drawPrimitive(self, element, option, painter: QPainter, widget=None) -> None:  # noqa: N802 (Qt name)
        super().drawPrimitive(element, option, painter, widget)
        if element not in self.INDICATORS or option.palette.color(R.Window).lightness() >= 128:
            return
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        group = G.Active if option.state & QStyle.StateFlag.State_Enabled else G.Disabled
        painter.setPen(QPen(option.palette.color(group, R.PlaceholderText), 1))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        box = QRectF(option.rect).adjusted(0.5, 0.5, -0.5, -0.5)
        if element == QStyle.PrimitiveElement.PE_IndicatorRadioButton:
            painter.drawEllipse(box)
        else:
            painter.drawRoundedRect(box, 2, 2)
        painter.restore()


def system_is_dark(app: QApplication) -> bool:
    """Whether the desktop asks for a dark look (Unknown counts as light)."""
    return app.styleHints().colorScheme() == Qt.ColorScheme.Dark


def apply_theme(app: QApplication, theme: str, font_size: int) -> bool:
    """Fusion style, the palette for `theme` ("system", "light" or "dark") and the font size in
    points. Returns whether the dark look is now in effect."""
    dark = theme == "dark" or (theme == "system" and system_is_dark(app))
    if not isinstance(app.style(), ConfabStyle):
        app.setStyle(ConfabStyle(QStyleFactory.create("Fusion")))
    pal = palette(dark)
    app.setPalette(pal)
    QToolTip.setPalette(pal)  # tooltips keep their own palette otherwise
    font = app.font()
    font.setPointSize(max(1, int(font_size)))
    app.setFont(font)
    return dark
